"""The Daytona backend against `FakeDaytona`, a stand-in for the SDK client; one real-account test.

`FakeDaytona` and its `FakeDaytonaSandbox` have the SDK's method names and signatures
(`create(params, timeout=)`, `sandbox.process.exec(command, cwd=, timeout=)`,
`sandbox.fs.upload_files / upload_file / download_file`, `sandbox.delete()`, `client.get/delete`)
and record what the backend asks for; they run nothing. The request objects (`Image`,
`Resources`, `CreateSandboxFromImageParams`, `FileUpload`) are the real SDK classes, so the SDK
must be installed (`pip install daytona==0.226.1`). Only `test_real_daytona_sandbox` talks to
Daytona; it is marked `cloud` and skips without DAYTONA_API_KEY.
"""

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

daytona_sdk = pytest.importorskip("daytona", reason="needs the daytona SDK (pip install daytona==0.226.1)")

from multiharness.sandbox import OUTPUT_CHARS, Limits, SandboxError, open_sandbox  # noqa: E402
from multiharness.sandbox.daytona import DaytonaSandbox, create_params  # noqa: E402

require_daytona_account = pytest.mark.skipif(
    not os.environ.get("DAYTONA_API_KEY"), reason="needs a Daytona account (DAYTONA_API_KEY)"
)


class FakeProcess:
    def __init__(self):
        self.calls = []  # (command, cwd, timeout)
        self.answer = lambda command: SimpleNamespace(exit_code=0, result="")

    def exec(self, command, cwd=None, env=None, timeout=None):
        self.calls.append((command, cwd, timeout))
        return self.answer(command)


class FakeFileSystem:
    def __init__(self, fail_upload=False):
        self.files: dict[str, bytes] = {}
        self.fail_upload = fail_upload

    def upload_files(self, files, timeout=1800):
        if self.fail_upload:
            raise daytona_sdk.DaytonaError("upload failed")
        for upload in files:
            self.files[upload.destination] = Path(upload.source).read_bytes()

    def upload_file(self, src, dst, timeout=1800):
        self.files[dst] = src

    def download_file(self, remote_path, timeout=1800):
        if remote_path not in self.files:
            raise daytona_sdk.DaytonaNotFoundError(f"file not found: {remote_path}")
        return self.files[remote_path]


class FakeDaytonaSandbox:
    def __init__(self, sandbox_id, fail_upload=False):
        self.id = sandbox_id
        self.process = FakeProcess()
        self.fs = FakeFileSystem(fail_upload)
        self.deletes = 0

    def delete(self, timeout=60, wait=False):
        self.deletes += 1


class FakeDaytona:
    """Stands in for `daytona.Daytona`: hands out FakeDaytonaSandbox and remembers the requests."""

    def __init__(self, fail_create: Exception | None = None, fail_upload: bool = False):
        self.fail_create, self.fail_upload = fail_create, fail_upload
        self.params = None
        self.sandboxes: dict[str, FakeDaytonaSandbox] = {}

    def create(self, params=None, *, timeout=60, on_snapshot_create_logs=None):
        self.params = params
        if self.fail_create is not None:
            raise self.fail_create
        sandbox = FakeDaytonaSandbox(f"sbx-{len(self.sandboxes)}", self.fail_upload)
        self.sandboxes[sandbox.id] = sandbox
        return sandbox

    def get(self, sandbox_id_or_name, request_timeout=None):
        return self.sandboxes.setdefault(sandbox_id_or_name, FakeDaytonaSandbox(sandbox_id_or_name))

    def delete(self, sandbox, timeout=60, wait=False):
        sandbox.delete(timeout, wait=wait)


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    task = tmp_path / "task-0001"
    (task / "environment" / "input" / "nested").mkdir(parents=True)
    (task / "environment" / "input" / "sales.csv").write_text("region,amount\nnorth,10\n")
    (task / "environment" / "input" / "nested" / "notes.txt").write_text("hello\n")
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
def client() -> FakeDaytona:
    return FakeDaytona()


@pytest.fixture
def sandbox(task_dir, client):
    with DaytonaSandbox(task_dir, Limits(), client=client) as sandbox:
        yield sandbox


def _fake(client: FakeDaytona) -> FakeDaytonaSandbox:
    return next(iter(client.sandboxes.values()))


# ----------------------------------------------------------------------------------------------
# Creating the sandbox
# ----------------------------------------------------------------------------------------------


def test_create_params_limit_label_and_isolate(task_dir):
    params = create_params(task_dir, Limits())
    assert (params.resources.cpu, params.resources.memory, params.resources.disk) == (1, 4, 5)
    assert params.labels == {"app": "multiharness", "task": "task-0001"}
    assert params.network_block_all is True
    assert (params.auto_stop_interval, params.auto_delete_interval) == (15, 0)  # a crashed run cleans up
    assert "COPY input /home/user/input" in params.image.dockerfile()


def test_dockerfile_that_copies_the_gold_is_refused(task_dir):
    (task_dir / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY ../tests/gold.json /gold.json\n")
    with pytest.raises(SandboxError, match="outside the build context"):
        create_params(task_dir, Limits())


def test_image_must_be_pinned_by_digest(task_dir):
    with pytest.raises(SandboxError, match="not pinned"):
        create_params(task_dir, Limits(), image="python:3.11-slim")
    pinned = "python@sha256:" + "0" * 64
    assert create_params(task_dir, Limits(), image=pinned).image == pinned


def test_inputs_are_uploaded_and_locked_and_nothing_else(sandbox, client):
    fake = _fake(client)
    assert fake.fs.files == {
        "/home/user/input/sales.csv": b"region,amount\nnorth,10\n",
        "/home/user/input/nested/notes.txt": b"hello\n",
    }
    commands = [command for command, _, _ in fake.process.calls]
    assert commands == [
        "mkdir -p -- /home/user/input /home/user/input/nested /workdir",
        "chmod -R a-w /home/user/input",
    ]


def test_missing_api_key_is_a_sandbox_error(task_dir, monkeypatch):
    monkeypatch.delenv("DAYTONA_API_KEY", raising=False)
    with pytest.raises(SandboxError, match="DAYTONA_API_KEY"):
        open_sandbox(task_dir, backend="daytona")


def test_failed_create_is_a_sandbox_error(task_dir):
    client = FakeDaytona(fail_create=daytona_sdk.DaytonaError("quota exceeded"))
    with pytest.raises(SandboxError, match="quota exceeded"):
        DaytonaSandbox(task_dir, Limits(), client=client)


def test_create_that_timed_out_after_creating_deletes_it(task_dir):
    error = daytona_sdk.DaytonaTimeoutError("took too long")
    error._attach_sandbox_id("sbx-late")
    client = FakeDaytona(fail_create=error)
    with pytest.raises(SandboxError, match="took too long"):
        DaytonaSandbox(task_dir, Limits(), client=client)
    assert client.sandboxes["sbx-late"].deletes == 1


def test_failed_upload_deletes_the_sandbox(task_dir):
    client = FakeDaytona(fail_upload=True)
    with pytest.raises(SandboxError, match="upload failed"):
        DaytonaSandbox(task_dir, Limits(), client=client)
    assert _fake(client).deletes == 1


# ----------------------------------------------------------------------------------------------
# Using it
# ----------------------------------------------------------------------------------------------


def test_exec_wraps_the_command_with_limits_and_a_tail(sandbox, client):
    fake = _fake(client)
    fake.process.answer = lambda command: SimpleNamespace(exit_code=3, result="oops\n")
    result = sandbox.exec("python3 analyse.py", timeout=7)
    command, cwd, timeout = fake.process.calls[-1]
    assert (result.output, result.exit_code, result.timed_out) == ("oops\n", 3, False)
    assert command.startswith("bash -c ") and cwd == "/workdir" and timeout == 7 + 30
    for expected in ["timeout -s KILL 7", "tail -c 64000", "-u 256", "-v 4194304", "python3 analyse.py"]:
        assert expected in command, expected


def test_exec_output_is_cut_to_the_last_characters(sandbox, client):
    _fake(client).process.answer = lambda command: SimpleNamespace(exit_code=0, result="a" * 20000 + "END")
    result = sandbox.exec("cat big")
    assert len(result.output) == OUTPUT_CHARS and result.output.endswith("aEND")
    assert result.output.startswith("[output truncated")


def test_exec_past_its_deadline_is_timed_out(sandbox, client):
    def slow(command):
        time.sleep(1)  # the sandbox's `timeout -s KILL 1` fired
        return SimpleNamespace(exit_code=137, result="")

    _fake(client).process.answer = slow
    result = sandbox.exec("sleep 30", timeout=1)
    assert (result.timed_out, result.exit_code) == (True, 137)


def test_sdk_error_during_exec_is_a_sandbox_error(sandbox, client):
    def broken(command):
        raise daytona_sdk.DaytonaError("sandbox not running")

    _fake(client).process.answer = broken
    with pytest.raises(SandboxError, match="sandbox not running"):
        sandbox.exec("echo hi")


def test_write_and_read_files(sandbox, client):
    sandbox.write_file("sub/answer.txt", "Zürich 42\n")
    assert _fake(client).fs.files["/workdir/sub/answer.txt"] == "Zürich 42\n".encode()
    assert sandbox.read_file("/workdir/sub/answer.txt") == "Zürich 42\n"
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("missing.txt")


def test_close_deletes_once_and_ends_the_sandbox(task_dir, client):
    sandbox = DaytonaSandbox(task_dir, Limits(), client=client)
    sandbox.close()
    sandbox.close()
    assert _fake(client).deletes == 1
    with pytest.raises(SandboxError, match="closed"):
        sandbox.exec("echo hi")


# ----------------------------------------------------------------------------------------------
# A real Daytona account
# ----------------------------------------------------------------------------------------------


@pytest.mark.cloud
@require_daytona_account
def test_real_daytona_sandbox(task_dir):
    with open_sandbox(task_dir, backend="daytona") as sandbox:
        assert sandbox.exec("cat /home/user/input/sales.csv").output.startswith("region,amount")
        assert "gold-answer" not in sandbox.exec("find / -name gold.json 2>/dev/null; echo done").output
        network = sandbox.exec("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\"")
        assert network.exit_code != 0
        assert sandbox.exec("sleep 30", timeout=2).timed_out
        sandbox.write_file("answer.txt", "42\n")
        assert sandbox.read_file("answer.txt") == "42\n"
