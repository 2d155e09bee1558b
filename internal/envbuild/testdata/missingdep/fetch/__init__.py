import requests
from dateutil import parser


def status(url):
    return requests.get(url).status_code


def year(text):
    return parser.parse(text).year
