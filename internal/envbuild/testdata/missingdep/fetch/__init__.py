import cwm_absent_alpha
from cwm_absent_beta import parser


def status(url):
    return cwm_absent_alpha.get(url).status_code


def year(text):
    return parser.parse(text).year
