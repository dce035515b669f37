# test/python.mk: the Python package's pytest suite (test/test_python.sh).
TESTS += test/test_python.sh
