"""Isolation is the Python default too: a plugin that crashes in probe is
refused and the interpreter lives; isolate_probe=False probes in-process."""
import os
import shutil

import pytest

import backplane as bp


def _broken(name):
    lib = os.environ.get("BACKPLANE_LIBRARY", "")
    path = os.path.join(os.path.dirname(lib), "..", "test", "broken", f"backend-{name}.so")
    if not os.path.exists(path):
        pytest.skip(f"SKIP: broken-plugin corpus not built ({path})")
    return path


def _plugin_dir(tmp_path, name):
    d = tmp_path / "plugins"
    d.mkdir()
    shutil.copy(_broken(name), d / f"backend-{name}.so")
    os.chmod(d / f"backend-{name}.so", 0o755)
    return str(d)


def test_crashing_plugin_refused_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("BACKPLANE_ISOLATE", raising=False)
    d = _plugin_dir(tmp_path, "crash")
    c = bp.Context(plugin_dir=d)  # in-process, this would kill the interpreter
    reports = {os.path.basename(p): (name, loaded, reason) for p, name, loaded, reason in c.plugins()}
    name, loaded, reason = reports["backend-crash.so"]
    assert not loaded
    assert name == "crash"
    assert "isolated probe" in reason
    c.close()


def test_opt_out_probes_in_process(tmp_path, monkeypatch):
    d = _plugin_dir(tmp_path, "counting")
    counter = tmp_path / "probes"
    monkeypatch.setenv("BROKEN_COUNTER", str(counter))
    monkeypatch.setenv("BACKPLANE_PROBE_CACHE", str(tmp_path / "cache.bin"))
    for _ in range(2):  # isolated: probed once in the helper, then cached
        bp.Context(plugin_dir=d).close()
    assert counter.stat().st_size == 1
    bp.Context(plugin_dir=d, isolate_probe=False).close()
    assert counter.stat().st_size == 2
