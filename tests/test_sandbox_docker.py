"""The Docker backend: the command lines it builds, its behaviour through a fake CLI, a real engine.

Without a Docker engine (CI, this project's default machines) the `docker`-marked tests skip;
the rest check the argv the backend builds, and drive `DockerSandbox` through `FakeDockerCLI`,
a shell script that stands in for the `docker` binary: it logs every call and runs `docker exec`
scripts with the local bash, so the in-container timeout, exit codes and output tail are real.
"""

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from multiharness.sandbox import OUTPUT_CHARS, Limits, SandboxError, open_sandbox
from multiharness.sandbox.docker import DockerSandbox, build_argv, exec_argv, image_tag, run_argv


def _docker_works() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


require_docker = pytest.mark.skipif(not _docker_works(), reason="needs a running Docker engine (docker info)")

FAKE_DOCKER_CLI = """#!/bin/bash
# FakeDockerCLI: logs each call; answers run/rm/inspect; runs exec scripts with the local bash.
echo "$*" >> "$FAKE_DOCKER_LOG"
case "$1" in
  run) echo fake-container-id ;;
  image) [ -e "$FAKE_DOCKER_LOG.built" ] ;;
  build) touch "$FAKE_DOCKER_LOG.built" ;;
  container) echo true ;;
  exec)
    shift; [ "$1" = --interactive ] && shift
    shift 2; shift  # --workdir /workdir NAME
    cd "$FAKE_DOCKER_WORKDIR" && exec "$@" ;;
esac
"""


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    task = tmp_path / "task-0001"
    (task / "environment" / "input").mkdir(parents=True)
    (task / "environment" / "input" / "sales.csv").write_text("region,amount\nnorth,10\n")
    (task / "environment" / "Dockerfile").write_text(
        "FROM python:3.11-slim\nRUN pip install pandas==3.1.1 pyarrow==26.0.1 numpy==2.4.6\n"
        "COPY input /home/user/input\nWORKDIR /workdir\n"
    )
    (task / "tests").mkdir()
    (task / "tests" / "gold.json").write_text('{"answer": "gold-answer-7f3a9c"}\n')
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("echo 42\n")
    return task


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch) -> Path:
    """Put FakeDockerCLI first on PATH; returns the log file of its calls."""
    bin_dir, workdir = tmp_path / "fake-bin", tmp_path / "fake-workdir"
    bin_dir.mkdir()
    workdir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER_CLI)
    (bin_dir / "docker").chmod(0o755)
    log = tmp_path / "docker-calls.log"
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_DOCKER_LOG", str(log))
    monkeypatch.setenv("FAKE_DOCKER_WORKDIR", str(workdir))
    return log


# ----------------------------------------------------------------------------------------------
# The command lines, without an engine
# ----------------------------------------------------------------------------------------------


def test_run_argv_isolates_and_limits_the_container(task_dir):
    argv = run_argv("box", "multiharness-task:abc", task_dir / "environment" / "input", Limits())
    line = " ".join(argv)
    for expected in [
        "--network none",  # no network at all
        "--read-only",  # the image's files cannot change
        "--cap-drop ALL",
        "--security-opt no-new-privileges",
        "--user 1000:1000",
        "--memory 4096m --memory-swap 4096m",  # no swap beyond the memory limit
        "--cpus 1.0",
        "--pids-limit 256",  # contains a fork bomb
        f"--ulimit fsize={1024 * 1024 * 1024}",
        "--tmpfs /workdir:rw,size=1024m,mode=1777",
        "--workdir /workdir",
        f"--mount type=bind,source={task_dir.resolve()}/environment/input,target=/home/user/input,readonly",
        "--entrypoint sleep multiharness-task:abc infinity",
    ]:
        assert expected in line, expected
    assert "tests" not in line and "gold" not in line and "solution" not in line


def test_build_uses_only_the_environment_folder(task_dir):
    assert build_argv("multiharness-task:abc", task_dir) == [
        "build", "--quiet", "--tag", "multiharness-task:abc", str(task_dir / "environment"),
    ]  # fmt: skip


def test_image_tag_follows_the_environment_content_only(task_dir):
    tag = image_tag(task_dir)
    assert tag.startswith("multiharness-task:") and tag == image_tag(task_dir)
    (task_dir / "tests" / "gold.json").write_text('{"answer": "changed"}\n')
    assert image_tag(task_dir) == tag  # the gold is not part of the image
    (task_dir / "environment" / "input" / "sales.csv").write_text("region,amount\nnorth,11\n")
    assert image_tag(task_dir) != tag


def test_exec_argv_runs_bash_in_the_workdir():
    assert exec_argv("box", "cat > \"$1\"", ["/workdir/a.txt"], interactive=True) == [
        "exec", "--interactive", "--workdir", "/workdir", "box", "bash", "-c", "cat > \"$1\"", "bash", "/workdir/a.txt",
    ]  # fmt: skip


def test_no_docker_cli_is_a_sandbox_error(task_dir, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxError, match="docker CLI is not installed"):
        open_sandbox(task_dir, backend="docker")


def test_an_unpinned_image_is_refused(task_dir, fake_docker):
    with pytest.raises(SandboxError, match="not pinned"):
        DockerSandbox(task_dir, Limits(), image="python:3.11-slim")


# ----------------------------------------------------------------------------------------------
# DockerSandbox through FakeDockerCLI
# ----------------------------------------------------------------------------------------------


def test_open_builds_once_runs_and_close_removes_once(task_dir, fake_docker):
    sandbox = open_sandbox(task_dir, backend="docker")
    sandbox.close()
    sandbox.close()
    with open_sandbox(task_dir, backend="docker"):
        pass
    calls = fake_docker.read_text().splitlines()
    assert [call.split()[0] for call in calls] == ["image", "build", "run", "rm", "image", "run", "rm"]
    assert calls[1].endswith(f"{image_tag(task_dir)} {task_dir}/environment")
    assert calls[3].startswith("rm --force multiharness-")


@pytest.mark.parametrize(
    ("command", "exit_code", "output"),
    [
        ("echo hi; echo oops >&2", 0, "hi\noops\n"),  # stdout and stderr together
        ("exit 3", 3, ""),
        ("printf 'a\\xffb'", 0, "a\ufffdb"),  # bytes that are not UTF-8 are replaced
    ],
)
def test_exec_output_and_exit_code(task_dir, fake_docker, command, exit_code, output):
    with open_sandbox(task_dir, backend="docker") as sandbox:
        result = sandbox.exec(command)
    assert (result.output, result.exit_code, result.timed_out) == (output, exit_code, False)
    assert "exec --workdir /workdir multiharness-" in fake_docker.read_text()


def test_exec_timeout_kills_and_reports(task_dir, fake_docker):
    with open_sandbox(task_dir, backend="docker") as sandbox:
        start = time.monotonic()
        result = sandbox.exec("sleep 30", timeout=1)
    assert (result.timed_out, result.exit_code) == (True, 137)
    assert time.monotonic() - start < 5


def test_exec_keeps_the_last_characters(task_dir, fake_docker):
    with open_sandbox(task_dir, backend="docker") as sandbox:
        result = sandbox.exec("python3 -c \"print('a' * 20000 + 'END')\"")
    assert len(result.output) == OUTPUT_CHARS and result.output.endswith("aEND\n")


# ----------------------------------------------------------------------------------------------
# A real engine
# ----------------------------------------------------------------------------------------------


@pytest.mark.docker
@require_docker
def test_real_container_is_isolated_and_removed(task_dir):
    with open_sandbox(task_dir, backend="docker") as sandbox:
        name = sandbox._name
        assert sandbox.exec("cat /home/user/input/sales.csv").output.startswith("region,amount")
        assert sandbox.exec("touch /home/user/input/x").exit_code != 0
        assert "gold-answer" not in sandbox.exec("find / -name gold.json 2>/dev/null; echo done").output
        network = sandbox.exec("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\"")
        assert network.exit_code != 0
        assert sandbox.exec("sleep 30", timeout=1).timed_out
        sandbox.write_file("answer.txt", "42\n")
        assert sandbox.read_file("/workdir/answer.txt") == "42\n"
        assert "pandas" in sandbox.exec("python3 -c 'import pandas; print(pandas.__name__)'").output
    gone = subprocess.run(["docker", "container", "inspect", name], capture_output=True)
    assert gone.returncode != 0
