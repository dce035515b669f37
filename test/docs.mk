# test/docs.mk: checks on the repository and its documentation.
#  test_repo_hygiene  no generated files (python/*.egg-info) tracked
TESTS += test/test_repo_hygiene.sh
#  test_man_page      docs/bp.1 against `bp --help` and `bp CMD --help`
TESTS += test/test_man_page.sh
#  test_doc_blocks    every ```c block of README.md and docs/*.md compiles
#                     (conventions in the script); programs run
TESTS += test/test_doc_blocks.sh
