import math


def circle_area(r):
    if r < 0:
        raise ValueError("negative radius")
    return math.pi * r * r


def rectangle_area(w, h):
    return w * h
