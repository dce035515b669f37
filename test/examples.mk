TESTS += test/test_examples.sh
