package testrun

import _ "embed"

// PertestModule is the Python module name of PertestPy: a recorder that
// runs inside the test process writes PertestPy under this name next to
// itself and imports it.
const PertestModule = "_cwm_pertest"

// PertestPy holds the per-test hooks of in-process recorders: a pytest
// hook wrapper and a unittest command line that call the recorder's
// start(test_id) and stop() around every test.
//
//go:embed pertest.py
var PertestPy []byte
