"""The edge launcher of an installed gateway, not a checkout: a wheel built from this tree and installed alone
(no source tree on the path) finds the vLLM script and its converter inside its own package, and runs it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# Run in the installed copy: where the package and the script are, and what the script says about a cache in
# which vLLM and the model are installed (its `installed` check, through VllmScript).
PROBE = """
import json, gateway
from gateway.launch.vllm import SCRIPT, VllmScript
script = VllmScript()
print(json.dumps({"package": gateway.__file__, "script": str(SCRIPT), "installed": script.installed(),
                  "command": script.command(port=8123, name="m", model_dir=None, args=[])}))
"""


def test_a_wheel_installed_launcher_finds_its_script_and_runs_it(tmp_path: Path) -> None:
    source, wheels, site, cache = (tmp_path / name for name in ("source", "wheels", "site", "cache"))
    # Built from a copy of what the wheel is made of, so no build/ or egg-info of this checkout takes part.
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("gateway", "router", "privacy", "accounting", "eval"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(wheels), str(source)], check=True, cwd=tmp_path)
    (wheel,) = wheels.glob("edgecloud_gateway-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True, cwd=tmp_path)
    # What `vllm.sh install` leaves in the cache: the launcher then starts the server instead of installing.
    text = (site / "gateway" / "launch" / "vllm.sh").read_text()
    vllm, smollm2 = re.search(r"^VLLM_VERSION=(\S+)", text, re.M), re.search(r"^SMOLLM2_VERSION=(\S+)", text, re.M)
    assert vllm and smollm2
    (cache / f"vllm-venv-{vllm[1]}").mkdir(parents=True)
    (cache / f"vllm-venv-{vllm[1]}" / ".installed").touch()
    (cache / f"smollm2-135m-instruct-hf-{smollm2[1]}").mkdir()
    (cache / f"smollm2-135m-instruct-hf-{smollm2[1]}" / "config.json").write_text("{}")
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(site), "ECGW_CACHE": str(cache), "ECGW_VLLM_BUILD": "cpu",
           "HOME": str(tmp_path)}
    probe = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert Path(found["package"]).is_relative_to(site)  # the installed copy, not this checkout
    script = Path(found["script"])
    assert script.is_relative_to(site) and script.is_file()
    assert (script.parent / "smollm2_hf.py").is_file()  # what `install` converts the model with
    assert found["installed"] is True  # the script ran and read the cache
    assert found["command"] == ["bash", str(script), "run", "8123", "m", ""]
    # and the script itself answers from the installed package (not a checkout's scripts/)
    model = subprocess.run(["bash", str(script), "model"], env=env, capture_output=True, text=True, check=True)
    assert model.stdout.strip() == str(cache / f"smollm2-135m-instruct-hf-{smollm2[1]}")
