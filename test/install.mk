# test_install: a moved install finds its plugins; PREFIX changes rebuild
TESTS += test/test_install.sh
