"""The log bridge: log_to_python() sends the library's lines to the logger
"backplane" with their levels mapped; the level filter applies; and
log_to_stderr() stops the records."""
import logging

import backplane as bp

MISSING = "/nonexistent-bp-log-test"


def _skip_lines(caplog):
    return [r for r in caplog.records
            if r.name == "backplane" and MISSING in r.getMessage()]


def test_lines_reach_logging_with_level(caplog):
    caplog.set_level(logging.DEBUG, logger="backplane")
    try:
        bp.log_to_python(logging.DEBUG)
        bp.Context(plugin_dir=MISSING).close()
        recs = _skip_lines(caplog)
        assert recs, "no debug line from the loader"
        assert all(r.levelno == logging.DEBUG for r in recs)
        assert recs[0].backplane_category == "loader"
        assert "[loader]" in recs[0].getMessage()
    finally:
        bp.log_to_stderr()
        bp.set_log_level(logging.ERROR)


def test_level_filter_and_restore(caplog):
    caplog.set_level(logging.DEBUG, logger="backplane")
    try:
        bp.log_to_python()
        bp.set_log_level(logging.WARNING)
        bp.Context(plugin_dir=MISSING).close()
        assert not _skip_lines(caplog)
        bp.log_to_stderr()
        bp.set_log_level(logging.DEBUG)
        bp.Context(plugin_dir=MISSING).close()
        assert not _skip_lines(caplog)
    finally:
        bp.log_to_stderr()
        bp.set_log_level(logging.ERROR)
