from setuptools import setup

setup(
    name="units",
    version="1.0",
    packages=["units"],
    install_requires=["packaging>=20"],
    extras_require={"test": ["pytest"]},
)
