"""The environment Spaces (envs/whitebox, envs/opencode, envs/harbor): real servers over HTTP and
WebSocket, their clients, OpenEnv's own validator, the deploy plans and bundles, and the playgrounds
in a real browser (Debian's headless Chromium driven by Playwright).

Each server runs as its own process from its folder (`python -m server.app`), bound to 127.0.0.1,
on a few tasks built here, with the real bubblewrap sandbox; each test module's servers are
stopped at its end. What cannot run here is marked: the Hub upload (`--submit` is checked
without a token) and `docker build` (no Docker engine).
"""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from multiharness.episode import FailureBudget
from multiharness.model import make_tiny_model
from multiharness.paths import DEFAULT_MODEL_DIR, PROJECT_ROOT
from multiharness.remote import RemoteDataAnalysisEnv
from multiharness.spaces import TaskCatalog
from multiharness.tasks import load_task, solution_command
from multiharness.tasks.build import build_task, load_manifest
from multiharness.whitebox import TOOLS, DataAnalysisEnv, finish_episode

ENVS = PROJECT_ROOT / "envs"
PYTHON = sys.executable
BROWSER_SCRIPT = PROJECT_ROOT / "tests" / "browser" / "playground.mjs"
START_S = 120  # a server imports gradio and checks its sandbox; 2 shared cores can take a minute


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    """Two tasks per split, built from the committed manifests: the first easy and the first hard."""
    root = tmp_path_factory.mktemp("tasks")
    for split in ("train", "test"):
        rows = load_manifest(split)
        for difficulty in ("easy", "hard"):
            row = next(r for r in rows if r["difficulty"] == difficulty)
            build_task(row, root / split / row["id"])
    return root


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serve(name: str, tasks: Path, python: str = PYTHON, folder: Path | None = None, **settings):
    """Run the `name` server (`python -m server.app` in `folder`, its env folder by default) on 127.0.0.1
    until the block ends; yields its URL."""
    port = _free_port()
    env = {**os.environ, "MULTIHARNESS_TASKS": str(tasks), **{k: str(v) for k, v in settings.items()}}
    process = subprocess.Popen([python, "-m", "server.app", "--host", "127.0.0.1", "--port", str(port)],
                               cwd=folder or ENVS / name, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            process.kill()
            raise RuntimeError(f"the {name} server on port {port} did not start: {process.communicate()[0][-2000:]}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def whitebox(tasks):
    with serve("whitebox", tasks) as url:
        yield url


@pytest.fixture(scope="module")
def harbor(tasks):
    with serve("harbor", tasks) as url:
        yield url


def _import_env(name: str):
    """The env folder's client and models modules (each folder has top-level `client` and `models`)."""
    sys.path.insert(0, str(ENVS / name))
    try:
        for module in ("client", "models"):
            sys.modules.pop(module, None)
        import client
        import models

        return client, models
    finally:
        sys.path.remove(str(ENVS / name))


# ---- the servers: /health, /docs, the Task API without gold ---------------------------------------


@pytest.mark.slow
def test_task_api_serves_cards_without_the_gold(whitebox, harbor, tasks):
    cards = [httpx.post(f"{url}/{name}/task", json={"split": "test", "index": 1}).json()["task"]
             for url, name in ((whitebox, "whitebox"), (harbor, "harbor"))]
    task = load_task(tasks / "test" / cards[0]["id"])
    shown = json.dumps(cards)
    expected_keys = {"id", "split", "index", "difficulty", "template", "answer_type", "instruction", "files"}
    assert (
        all(set(card) == expected_keys for card in cards)
        and cards[0] == cards[1]
        and "gold" not in shown and "solve.sh" not in shown and "grader" not in shown
        and all(f["path"].startswith("/home/user/input/") for f in cards[0]["files"])
        and {f["name"] for f in cards[0]["files"]} == {p.name for p in task.input_dir.iterdir()}
    )


@pytest.mark.slow
def test_servers_answer_health_docs_and_a_bad_task_index(whitebox, harbor):
    answers = {
        "health": httpx.get(f"{whitebox}/health").json(),
        "docs": httpx.get(f"{harbor}/docs").status_code,
        "out of range": httpx.post(f"{whitebox}/whitebox/task", json={"split": "test", "index": 99}).status_code,
        "splits": httpx.get(f"{harbor}/harbor/splits").json(),
    }
    assert answers == {
        "health": {"status": "healthy"},
        "docs": 200,
        "out of range": 400,  # OpenEnv's answer to an IndexError
        "splits": [{"name": "train", "type": "train"}, {"name": "test", "type": "test"}],
    }


# ---- whitebox: a full episode from client.py over WebSocket -----------------------------------------


@pytest.mark.slow
def test_whitebox_episode_over_websocket_scores_like_the_trainer(whitebox, tasks):
    client, models = _import_env("whitebox")
    Action = models.WhiteboxAction
    with client.WhiteboxEnv(base_url=whitebox).sync() as env:
        card = env.reset(split="train", index=0).observation.task
        task = load_task(tasks / "train" / card["id"])
        seen = {
            # a tool called with the wrong arguments: refused, not counted
            "bad arguments": env.step(Action(tool="bash", arguments={"cmd": "ls"})).observation.output,
            # an empty answer: refused, the episode goes on
            "empty answer": env.step(Action(tool="submit_solution", arguments={"answer": " "})).observation.output,
        }
        output = env.step(Action(tool="bash", arguments={"command": solution_command(task)})).observation.output
        result = env.step(Action(tool="submit_solution", arguments={"answer": output.split("\n[exit code")[0].strip()}))
        seen["after the answer"] = env.step(Action(tool="ls", arguments={"path": "/workdir"})).observation.output
        state = env.state()
    assert (
        "bash takes (command)" in seen["bad arguments"]
        and "answer is empty" in seen["empty answer"]
        and result.done and result.reward == pytest.approx(1 + 0.1 * 15 / 16)
        and result.observation.outcome == {"task_id": task.id, "correctness": 1, "reward": result.reward,
                                           "tool_calls": 1, "boundary": None, "error": None}
        and "episode is over" in seen["after the answer"]
        and state.tool_calls == 1 and state.done
    )


@pytest.mark.slow
def test_remote_environment_gives_the_local_environments_outcome(whitebox, tasks):
    # The same tool calls through RemoteDataAnalysisEnv (what train/whitebox.py --server would use)
    # and through DataAnalysisEnv on this machine end with the same Outcome.
    client, _ = _import_env("whitebox")
    task = load_task(next((tasks / "test").iterdir()))
    outcomes = []
    for env in (client.RemoteDataAnalysisEnv(whitebox), DataAnalysisEnv()):
        env.reset(task_path=str(task.path))
        env.bash("ls /home/user/input")
        output = env.bash(solution_command(task))
        env.submit_solution(output.split("\n[exit code")[0].strip())
        outcomes.append(finish_episode(env))
    assert outcomes[0] == outcomes[1] and outcomes[0].correctness == 1


def test_remote_environment_offers_trl_the_local_tools_and_nothing_else():
    # TRL offers every public function of the environment's class as a tool, its schema from the docstring.
    import inspect

    from transformers.utils import get_json_schema

    offered = {name for name, _ in inspect.getmembers(RemoteDataAnalysisEnv, inspect.isfunction)
               if not name.startswith("_") and name != "reset"}
    schemas = {name: get_json_schema(getattr(RemoteDataAnalysisEnv, name)) for name in TOOLS}
    assert offered == set(TOOLS) and schemas == {name: get_json_schema(getattr(DataAnalysisEnv, name)) for name in TOOLS}


@pytest.mark.slow
def test_train_whitebox_with_server_trains_on_episodes_the_server_ran_and_graded(whitebox, tasks, tmp_path):
    # The trainer's MULTIHARNESS_HOME is empty, so it has no sandbox Python: a local rollout could not start
    # (test_train.py shows the run stopping). Two steps with every rollout graded means the server ran them.
    model = make_tiny_model(tmp_path / "tiny")
    env = {**os.environ, "MULTIHARNESS_HOME": str(tmp_path / "empty-home")}
    result = subprocess.run(
        [PYTHON, "train/whitebox.py", "--preset", "smoke", "--model", str(model), "--tasks", str(tasks / "train"),
         "--output", str(tmp_path / "run"), "--server", whitebox],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    state = json.loads((tmp_path / "run" / "trainer_state.json").read_text())
    rewards = [h["reward"] for h in state["log_history"] if "reward" in h]
    assert state["global_step"] == 2 and len(rewards) == 2 and all(r == r for r in rewards)  # no NaN: all graded


def test_train_whitebox_with_no_server_at_the_url_stops_before_loading_the_model():
    url = f"http://127.0.0.1:{_free_port()}"
    result = subprocess.run([PYTHON, "train/whitebox.py", "--preset", "smoke", "--server", url],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert (result.returncode == 1 and f"error: no whitebox server at {url}" in result.stderr
            and "python -m server.app" in result.stderr and "model:" not in result.stdout), result.stderr[-2000:]


@pytest.mark.slow
def test_a_server_that_dies_ends_its_episodes_not_graded(tasks):
    task = load_task(next((tasks / "train").iterdir()))
    budget = FailureBudget(1.0, min_episodes=1, progress=False)
    with serve("whitebox", tasks) as url:
        env = RemoteDataAnalysisEnv(url, budget=budget)
        env.reset(task_path=str(task.path))
        listed = env.bash("ls /home/user/input")
    # The server is stopped: the episode in flight and the next one end as not graded, naming the server.
    seen = {"tool": env.bash("ls"), "after": env.bash("cat /home/user/input/x")}
    outcomes = [finish_episode(env)]
    seen["reset"] = env.reset(task_path=str(task.path))
    outcomes.append(finish_episode(env))
    assert (
        "[exit code 0]" in listed
        and seen["tool"].startswith(f"Error: the whitebox server at {url} failed during bash")
        and "episode is over" in seen["after"] and "did not start the task" in seen["reset"]
        and [(o.reward, o.correctness, o.boundary) for o in outcomes] == [(None, None, "sandbox")] * 2
        and outcomes[0].tool_calls == 1 and all(url in o.error for o in outcomes)
        and len(budget.failures) == 2
    )


# ---- harness rollouts over WebSocket ------------------------------------------------------------------


@pytest.mark.slow
def test_harbor_rollout_over_websocket_returns_outcome_calls_and_trace(harbor):
    client, models = _import_env("harbor")
    with client.HarborEnv(base_url=harbor).sync() as env:
        env.reset()
        result = env.step(models.RolloutAction(split="train", index=0, harness="mini-swe-agent", endpoint="scripted"))
        refused = {
            "unknown harness": env.step(models.RolloutAction(harness="aider")).observation.message,
            "dead endpoint": env.step(models.RolloutAction(harness="codex", endpoint="http://127.0.0.1:9/v1")).observation,
        }
    observation = result.observation
    assert (
        observation.outcome["correctness"] == 1 and result.reward > 1
        and len(observation.calls) == len(observation.trace["turns"]) == observation.episode["model_calls"] > 0
        and observation.calls[-1]["answer"]["role"] == "assistant"
        and "not served here" in refused["unknown harness"]
        and refused["dead endpoint"].outcome["boundary"] == "engine" and refused["dead endpoint"].reward is None
    )


# ---- OpenEnv's validator, deploy plans, bundles ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["whitebox", "opencode", "harbor"])
def test_openenv_validate_passes_on_each_folder(name):
    # Up to the semantic level without the image build (no Docker engine here): the runtime checks
    # that need the image are skipped, which OpenEnv reports as WARN with exit code 0.
    result = subprocess.run([str(Path(PYTHON).parent / "openenv"), "validate", str(ENVS / name), "--skip-build"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "PASS  static.manifest" in result.stdout, result.stdout + result.stderr


@pytest.mark.slow
def test_openenv_validate_passes_on_a_running_server(whitebox):
    result = subprocess.run([str(Path(PYTHON).parent / "openenv"), "validate", "--url", whitebox],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "Verdict: PASS" in result.stdout, result.stdout


@pytest.mark.parametrize("name, secrets", [("whitebox", ["DAYTONA_API_KEY"]), ("opencode", ["DAYTONA_API_KEY"]),
                                           ("harbor", ["DAYTONA_API_KEY"])])
def test_deploy_prints_the_plan_and_writes_a_bundle_without_secrets(name, secrets, tmp_path):
    bundle = tmp_path / "bundle"
    env = {**os.environ, "DAYTONA_API_KEY": "dtn-secret-value", "HF_TOKEN": "hf_secret_value"}
    result = subprocess.run([PYTHON, str(ENVS / name / "deploy.py"), "--repo", f"org/{name}", "--out", str(bundle)],
                            capture_output=True, text=True, env=env, timeout=120)
    files = {str(p.relative_to(bundle)) for p in bundle.rglob("*") if p.is_file()}
    text = "".join(p.read_text(errors="replace") for p in bundle.rglob("*") if p.is_file() and p.suffix != ".png")
    assert (
        result.returncode == 0
        and f"https://huggingface.co/spaces/org/{name}" in result.stdout
        and all(f"  {secret}" in result.stdout for secret in secrets)
        and "secret_value" not in result.stdout + text and "dtn-secret" not in result.stdout + text
        and {"README.md", "Dockerfile", "openenv.yaml", "pyproject.toml", "uv.lock", "server/app.py",
             "multiharness/episode.py", "data/train.json", "data/test.json", "requirements-sandbox.txt"} <= files
        and not any("__pycache__" in f or f.endswith(".env") or f == "deploy.py" for f in files)
    )


@pytest.mark.parametrize("name", ["whitebox", "opencode", "harbor"])
def test_deploy_submit_without_a_token_says_what_to_set(name, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")  # no stored token either
    result = subprocess.run([PYTHON, str(ENVS / name / "deploy.py"), "--repo", f"org/{name}", "--submit"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 1 and "set HF_TOKEN" in result.stderr


def test_push_space_calls_match_the_installed_huggingface_hub():
    # --submit cannot reach the Hub here: check each call push_space makes against the signatures.
    import inspect

    from huggingface_hub import HfApi

    calls = {
        "create_repo": dict(repo_id="org/x", repo_type="space", space_sdk="docker", exist_ok=True),
        "add_space_variable": dict(repo_id="org/x", key="K", value="V"),
        "upload_folder": dict(repo_id="org/x", repo_type="space", folder_path="bundle", commit_message="m"),
    }
    for name, kwargs in calls.items():
        inspect.signature(getattr(HfApi, name)).bind(HfApi, **kwargs)  # raises TypeError on a mismatch
    source = inspect.getsource(__import__("multiharness.spaces", fromlist=["push_space"]).push_space)
    assert all(f"api.{name}(" in source for name in calls)


def _pypi_reachable() -> bool:
    try:
        urllib.request.urlopen("https://pypi.org/simple/openenv/", timeout=5)
        return True
    except OSError:
        return False


# One episode from each bundle's client.py, run by its fresh venv in the bundle folder: it prints the outcome.
_EPISODES = {
    "whitebox": """
import json, sys
from client import WhiteboxAction, WhiteboxEnv
with WhiteboxEnv(base_url=sys.argv[1]).sync() as env:
    env.reset(split="train", index=0)
    output = env.step(WhiteboxAction(tool="bash", arguments={"command": sys.argv[2]})).observation.output
    answer = output.split("\\n[exit code")[0].strip()
    print(json.dumps(env.step(WhiteboxAction(tool="submit_solution", arguments={"answer": answer})).observation.outcome))
""",
    "opencode": """
import json, sys
from client import OpenCodeEnv
from models import RolloutAction
with OpenCodeEnv(base_url=sys.argv[1]).sync() as env:
    env.reset()
    result = env.step(RolloutAction(split="train", index=0, harness="opencode", endpoint="scripted"))
    print(json.dumps(result.observation.outcome))
""",
    "harbor": """
import json, sys
from client import HarborEnv
from models import RolloutAction
with HarborEnv(base_url=sys.argv[1]).sync() as env:
    env.reset()
    result = env.step(RolloutAction(split="train", index=0, harness="opencode", endpoint="scripted"))
    print(json.dumps(result.observation.outcome))
""",
}
UV = "uv==0.9.5"  # the Dockerfiles' uv (COPY --from=ghcr.io/astral-sh/uv:0.9.5)


def _harbor_python() -> str | None:
    """The Python >= 3.12 that install.sh found for the checkout's Harbor (none on PATH here: pyenv's shim says so)."""
    harbor = PROJECT_ROOT / ".tools" / "harbor" / "bin" / "python"
    if not harbor.exists():
        return None
    return subprocess.run([str(harbor), "-c", "import sys; print(sys._base_executable)"], capture_output=True,
                          text=True, check=True).stdout.strip()


def _run(*command: str, cwd: Path | None = None, env: dict | None = None) -> str:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900,
                            env=None if env is None else {**os.environ, **env})
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout[-2000:]}{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def image_tools(tmp_path_factory) -> SimpleNamespace:
    """What every Space's image has before its bundle: uv, and a MULTIHARNESS_HOME with the sandbox's Python."""
    root = tmp_path_factory.mktemp("image")
    _run(sys.base_prefix + "/bin/python3", "-m", "venv", str(root / "uv"))
    _run(str(root / "uv" / "bin" / "pip"), "install", "--quiet", UV)
    _run("/usr/bin/python3", "-m", "venv", str(root / "home" / "sandbox-env"))  # from the system one, under /usr
    _run(str(root / "home" / "sandbox-env" / "bin" / "pip"), "install", "--quiet", "-r",
         str(PROJECT_ROOT / "requirements-sandbox.txt"))
    return SimpleNamespace(uv=str(root / "uv" / "bin" / "uv"), home=root / "home")


@pytest.mark.slow
@pytest.mark.skipif(not _pypi_reachable(), reason="installs the bundle's locked dependencies from PyPI")
@pytest.mark.parametrize("name", ["whitebox", "opencode", "harbor"])
def test_bundle_installs_in_a_fresh_venv_serves_and_runs_an_episode(name, tmp_path, tasks, image_tools):
    # The Dockerfile's steps without Docker (no engine here): a fresh venv; `uv sync --frozen` from the bundle's
    # lockfile; the bundle itself built as a package; for the harness Spaces torch from its local CPU wheel (the
    # Dockerfile takes it from PyTorch's CPU index, not reachable here) and the harness CLIs into the bundle's
    # .tools; then `python -m server.app` from the bundle folder. Not redone: the default model's conversion (the
    # machine's, MULTIHARNESS_MODEL), mini-swe-agent's venv (no harness here uses it) and the 1,250 tasks.
    if name != "whitebox" and not shutil.which("npm"):
        pytest.skip("the harness CLIs install with npm: apt-get install npm")
    harbor_python = _harbor_python()
    if name == "harbor" and harbor_python is None:
        pytest.skip("Harbor needs Python >= 3.12: ./install.sh finds one and makes .tools/harbor")
    bundle, venv = tmp_path / "bundle", tmp_path / "venv"
    python, uv = str(venv / "bin" / "python"), image_tools.uv
    try:
        _run(PYTHON, str(ENVS / name / "deploy.py"), "--repo", f"org/{name}", "--out", str(bundle))
        _run(sys.base_prefix + "/bin/python3", "-m", "venv", str(venv))
        _run(uv, "sync", "--frozen", "--no-install-project", cwd=bundle, env={"UV_PROJECT_ENVIRONMENT": str(venv)})
        _run(uv, "pip", "install", "--python", python, "--no-deps", str(bundle))  # its pyproject's package list
        if name != "whitebox":
            _run(python, "-m", "ensurepip")  # uv sync leaves no pip; pip reads the local wheel's find-links
            _run(python, "-m", "pip", "install", "--quiet", "torch==2.13.0")
            npm = bundle / ".tools" / "npm"
            npm.mkdir(parents=True)
            for lock in ("package.json", "package-lock.json"):
                shutil.copy(bundle / "clis" / lock, npm)
            _run("npm", "install", "--prefix", str(npm), "--no-audit", "--no-fund", "--prefer-offline")
        if name == "harbor":
            harbor = bundle / ".tools" / "harbor"
            _run(uv, "venv", "--python", harbor_python, str(harbor))
            _run(uv, "pip", "install", "--python", str(harbor / "bin" / "python"), "-r",
                 str(bundle / "requirements-harbor.txt"))
        task = TaskCatalog(tasks).task("train", 0)
        settings = dict(MULTIHARNESS_HOME=image_tools.home, MULTIHARNESS_MODEL=DEFAULT_MODEL_DIR)
        with serve(name, tasks, python=python, folder=bundle, **settings) as url:
            health = httpx.get(f"{url}/health").json()
            printed = _run(python, "-c", _EPISODES[name], url, solution_command(task), cwd=bundle)
    finally:  # several GB (torch, the CLIs): not kept for pytest's last-runs retention
        shutil.rmtree(bundle, ignore_errors=True)
        shutil.rmtree(venv, ignore_errors=True)
    outcome = json.loads(printed.splitlines()[-1])
    assert health == {"status": "healthy"} and outcome["task_id"] == task.id and outcome["correctness"] == 1, outcome


# ---- the playgrounds in a real browser ---------------------------------------------------------------


def _browser(config: dict) -> dict:
    if not (shutil.which("node") and Path("/usr/bin/chromium").exists()
            and (BROWSER_SCRIPT.parent / "node_modules" / "playwright-core").exists()):
        pytest.skip("needs node, /usr/bin/chromium and playwright-core: ./install.sh installs them")
    result = subprocess.run(["node", str(BROWSER_SCRIPT), json.dumps(config)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_whitebox_playground_solves_a_task_at_phone_width(whitebox, tasks, tmp_path):
    task = load_task(sorted((tasks / "train").iterdir())[0])
    seen = _browser({"scenario": "whitebox-solve", "url": whitebox, "command": solution_command(task), "width": 390,
                     "screenshot": str(tmp_path / "whitebox.png")})
    assert (
        seen["page_width"] <= 390  # nothing wider than a phone's screen
        and task.id in seen["question"]
        and "command not found" in seen["bad_command"] and "[exit code 127]" in seen["bad_command"]
        and "answer is empty" in seen["empty_answer"]
        and "&lt;b&gt;bold&lt;/b&gt;" in seen["history_html"] and "<b>bold</b>" not in seen["history_html"]
        and seen["correctness"] == "1" and float(seen["reward"]) > 1
        and (tmp_path / "whitebox.png").stat().st_size > 0
    )


@pytest.mark.slow
def test_whitebox_playground_says_when_the_session_expired(tasks):
    with serve("whitebox", tasks, SESSION_SECONDS=3) as url:
        seen = _browser({"scenario": "whitebox-expire", "url": url, "wait_ms": 4500})
    assert "Sandbox ready" in seen["started"] and "expired" in seen["expired"]


@pytest.mark.slow
def test_opencode_playground_runs_a_scripted_rollout_and_shows_its_trace(tasks, tmp_path):
    with serve("opencode", tasks) as url:
        seen = _browser({"scenario": "harness-rollout", "url": url, "screenshot": str(tmp_path / "opencode.png"),
                         "timeout_ms": 300_000})
    assert "correctness 1" in seen["verdict"] and "model call 1" in seen["calls"] and "tool call" in seen["calls"] \
        and "capture-opencode" in seen["capture"]
