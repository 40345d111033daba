# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""jobs/: the HF Job plans and calls, the vLLM command per model family, the Slurm launcher.

Nothing here reaches the Hub or a GPU. Where the Hub would answer, `hub` below stands in for it:
it replaces the `HfApi` methods `--submit` calls, checks each call against the real method's
signature in the installed huggingface_hub, and records it.
"""

import importlib.util
import inspect
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
from huggingface_hub import HfApi
from huggingface_hub._jobs_api import _create_job_spec

ROOT = Path(__file__).resolve().parent.parent
FAKE_TOKEN = "hf_planted0fake0token0value0for0tests"  # planted in the environment; must never be printed


def load(name: str):
    """A jobs/ script as a module (jobs/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "jobs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hf_job = load("hf_job")
serve_vllm = load("serve_vllm")


def run(*argv, env=None):
    return subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def planted_token(monkeypatch, tmp_path):
    """A fake token in HF_TOKEN, and no token saved on disk (HF_HOME is empty)."""
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    return FAKE_TOKEN


@pytest.fixture
def hub(monkeypatch):
    """STAND-IN FOR THE HUB: the HfApi methods `--submit` calls, bound against their real signatures, recorded."""
    calls = []

    def stand_in(name, answer):
        real = getattr(HfApi, name)

        def method(self, *args, **kwargs):
            bound = inspect.signature(real).bind(self, *args, **kwargs)  # TypeError if it does not fit 2.4.0's API
            calls.append((name, {k: v for k, v in bound.arguments.items() if k != "self"}))
            return answer

        monkeypatch.setattr(HfApi, name, method)

    stand_in("create_bucket", SimpleNamespace(url="https://huggingface.co/buckets/my-org/runs"))
    stand_in("batch_bucket_files", None)
    stand_in("run_job", SimpleNamespace(id="0123abcd", url="https://huggingface.co/jobs/me/0123abcd"))
    return calls


# ---- the plans a reader checks ------------------------------------------------------------------

TRAIN_PLANS = [
    # script, the launch line the job runs (jobs/train.slurm: vLLM on GPU 0, the script on GPU 1)
    ("train/whitebox.py", "bash jobs/train.slurm train/whitebox.py --preset gpu --output /bucket/r1/output"),
    ("train/opencode.py", "bash jobs/train.slurm train/opencode.py --preset gpu --engine vllm --output /bucket/r1/output"),
    ("train/harbor.py", "bash jobs/train.slurm train/harbor.py --preset gpu --engine vllm --output /bucket/r1/output"),
]


@pytest.mark.parametrize("script, launch", TRAIN_PLANS)
def test_train_plan_shows_the_whole_job_and_no_secret_value(script, launch, planted_token):
    result = run("jobs/hf_job.py", "train", "--script", script, "--bucket", "my-org/runs", "--run", "r1")
    expected = [
        "image    python:3.12.11-bookworm",
        "flavor   h200x2 (vLLM on GPU 0, the trainer on GPU 1)",
        "timeout  24h",
        "volumes  hf://buckets/my-org/runs -> /bucket (read-write)",
        "MODEL=Qwen/Qwen3.5-2B",  # the model vLLM serves and the trainer trains
        "secrets  HF_TOKEN ",  # by name
        "bash install.sh --gpu --no-run",
        ".venv/bin/python -m multiharness tasks build",
        launch,
        "uploaded to hf://buckets/my-org/runs/r1/source/",
        "             multiharness/reward.py",  # the library travels with the script
        f"             {script}",
        "outputs  hf://buckets/my-org/runs/r1/output/",
        "plan only: rerun with --submit",
    ]
    missing = [line for line in expected if line not in result.stdout]
    assert result.returncode == 0 and not missing and planted_token not in result.stdout + result.stderr, (
        missing, result.stdout, result.stderr)


def test_eval_plan_runs_on_cpu_with_the_cpu_torch_and_writes_its_report_to_the_bucket():
    plan = hf_job.plan_job("eval", "eval/evaluate.py", bucket="my-org/runs", run="e1", model="/bucket/r1/output",
                           script_args=("--per-group", "6"))
    assert (plan.flavor, plan.timeout, plan.env) == (
        "cpu-upgrade", "4h", {"PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cpu"}
    ) and plan.script_lines[-1] == (
        ".venv/bin/python eval/evaluate.py --model /bucket/r1/output --per-group 6 --output /bucket/e1/output/eval"
    ) and "bash install.sh --no-run" in plan.script_lines


def test_the_job_command_is_valid_bash():
    plan = hf_job.plan_job("train", "train/opencode.py", bucket="my-org/runs", run="r1", script_args=("--steps", "3"))
    assert plan.command[:2] == ["bash", "-c"] and subprocess.run(["bash", "-n", "-c", plan.command[2]]).returncode == 0


def test_uploaded_source_is_the_allowlist_without_dotfiles_or_caches():
    files = hf_job.source_files()
    hidden = [f for f in files if any(p.startswith(".") or p == "__pycache__" for p in f.split("/"))]
    outside = [f for f in files if f.split("/")[0] in {"outputs", "build", "tests", ".venv", ".tools", "envs"}
               and not f.startswith("tests/browser/package")]
    assert {"install.sh", "train/harbor.py", "jobs/train.slurm", "data/train.json"} <= set(files) and not hidden and not outside


BAD_SETTINGS = [
    # what the user typed (train unless said), what the message must name
    (dict(script="train/sft.py"), "Expected one of ['train/harbor.py', 'train/opencode.py', 'train/whitebox.py']"),
    (dict(flavor="h100"), "--flavor 'h100' is not a Jobs flavor"),
    (dict(flavor="a100-large"), "has 1 GPU(s); train needs 2"),  # vLLM and the trainer each need a GPU
    (dict(bucket="runs"), "--bucket must be ORG/NAME, got 'runs'"),
    (dict(script_args=("--output", "x")), "--output after `--` is set by this script"),
    (dict(script_args=("--model=Qwen/Qwen3.5-2B",)), "--model after `--` is set by this script"),
    (dict(run="my run"), "--run 'my run'"),
]


@pytest.mark.parametrize("change, message", BAD_SETTINGS)
def test_a_bad_setting_is_refused_with_what_to_change(change, message):
    settings = dict(script="train/opencode.py", bucket="my-org/runs") | change
    with pytest.raises(ValueError) as error:
        hf_job.plan_job("train", settings.pop("script"), **settings)
    assert message in str(error.value)


# ---- --submit, against the installed huggingface_hub --------------------------------------------


def test_submit_without_a_token_says_what_to_set_and_sends_nothing(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path)}  # no HF_TOKEN, no saved login
    result = run("jobs/hf_job.py", "train", "--script", "train/opencode.py", "--bucket", "my-org/runs", "--submit",
                 env=env)
    assert result.returncode == 1 and "no Hugging Face token: set HF_TOKEN" in result.stderr \
        and "hf auth login" in result.stderr and "started:" not in result.stdout


def test_submit_uploads_the_plan_and_runs_it_through_run_job(hub, planted_token, capsys):
    hf_job.main(["train", "--script", "train/harbor.py", "--bucket", "my-org/runs", "--run", "r1", "--submit",
                 "--", "--steps", "3"])
    printed = capsys.readouterr().out
    plan = hf_job.plan_job("train", "train/harbor.py", bucket="my-org/runs", run="r1", script_args=("--steps", "3"))
    (_, bucket), (_, upload), (_, job) = hub
    spec = _create_job_spec(**{k: v for k, v in job.items() if k not in {"namespace", "token"}})  # what the Hub gets
    uploaded = [destination for _, destination in upload["add"]]
    assert upload["bucket_id"] == "my-org/runs"
    secret_only = {k: v for k, v in spec.items() if k != "secrets"}
    assert [name for name, _ in hub] == ["create_bucket", "batch_bucket_files", "run_job"]
    assert bucket == {"bucket_id": "my-org/runs", "private": True, "exist_ok": True}  # private when it is created
    assert uploaded == [f"r1/source/{name}" for name in plan.source]
    assert spec["dockerImage"] == "python:3.12.11-bookworm" and spec["flavor"] == "h200x2"
    assert spec["command"] == plan.command and spec["environment"] == plan.env
    assert spec["timeoutSeconds"] == 24 * 3600 and spec["labels"] == {"name": "r1"}
    assert spec["volumes"] == [{"type": "bucket", "source": "my-org/runs", "mountPath": "/bucket", "readOnly": False}]
    # The token reaches the job only as its encrypted secret; nowhere else in the call, nowhere printed.
    assert spec["secrets"] == {"HF_TOKEN": planted_token} and planted_token not in repr(secret_only)
    assert planted_token not in printed and "started: https://huggingface.co/jobs/me/0123abcd" in printed


def test_submit_refuses_an_unset_secret_before_uploading_anything(hub, planted_token, monkeypatch):
    monkeypatch.delenv("DAYTONA_API_KEY", raising=False)
    with pytest.raises(SystemExit, match="secret DAYTONA_API_KEY is not set in your environment"):
        hf_job.main(["train", "--script", "train/whitebox.py", "--bucket", "my-org/runs", "--secret", "DAYTONA_API_KEY",
                     "--submit"])
    assert hub == []


def test_installed_huggingface_hub_is_the_pinned_one():
    # The jobs and buckets API this file calls is 2.4.0's; another version may have moved it.
    pinned = next(line for line in (ROOT / "requirements.txt").read_text().splitlines()
                  if line.startswith("huggingface_hub==") or line.startswith("huggingface-hub=="))
    assert pinned.split("==")[1].split()[0] == huggingface_hub.__version__ == "2.4.0"


# ---- vLLM: the exact serve command per model family ---------------------------------------------

SERVE = [
    # model, the family-specific flags that must be in its command
    ("Qwen/Qwen3.5-2B", ["--tool-call-parser qwen3_coder", "--max-model-len 65536",
                         """--default-chat-template-kwargs '{"enable_thinking": false}'"""]),
    ("LiquidAI/LFM2.5-1.2B-Instruct", ["--tool-call-parser lfm2", "--max-model-len 32768"]),
    ("HuggingFaceTB/SmolLM2-135M-Instruct", ["--tool-call-parser hermes", "--max-model-len 8192",
                                             "--chat-template ", "trl/chat_templates/qwen2_5.jinja"]),
]
EVERY_FAMILY = [
    "VLLM_SERVER_DEV_MODE=1 vllm serve",  # TRL's weight sync and pause endpoints
    "--port 8000",
    """--weight-transfer-config '{"backend": "nccl"}'""",
    "--logprobs-mode processed_logprobs",  # behaviour logprobs of the distribution really sampled
    "--return-tokens-as-token-ids",
    "--generation-config vllm",  # no hidden sampling defaults from the model's generation_config.json
    "--enable-auto-tool-choice",
]


@pytest.mark.parametrize("model, flags", SERVE)
def test_serve_vllm_prints_the_flags_of_the_model_family(model, flags):
    result = run("jobs/serve_vllm.py", "--model", model, "--port", "8000")
    missing = [flag for flag in [f"vllm serve {model}", *EVERY_FAMILY, *flags] if flag not in result.stdout]
    assert result.returncode == 0 and not missing and "rerun with --run" in result.stdout, (missing, result.stdout)


def test_serve_vllm_chat_template_for_smollm2_is_a_file_that_exists():
    _, argv = serve_vllm.serve_command("HuggingFaceTB/SmolLM2-135M-Instruct", serve_vllm.FAMILIES["smollm2"])
    template = Path(argv[argv.index("--chat-template") + 1])
    assert "<tool_call>" in template.read_text()


def test_serve_vllm_printed_command_is_the_argv_it_would_run():
    env, argv = serve_vllm.serve_command("Qwen/Qwen3.5-2B", serve_vllm.FAMILIES["qwen3.5"], port=8001)
    printed = serve_vllm.printable(env, argv).replace("\\\n", " ")
    assert shlex.split(printed) == ["VLLM_SERVER_DEV_MODE=1", *argv]


def test_serve_vllm_asks_for_the_family_of_a_folder_whose_name_does_not_say():
    result = run("jobs/serve_vllm.py", "--model", "outputs/opencode")
    assert result.returncode == 1 and "pass --family, one of ['lfm2', 'qwen3.5', 'smollm2']" in result.stderr


# ---- the Slurm launcher, and --help ---------------------------------------------------------------


def test_train_slurm_parses_and_asks_for_gpus_vllm_and_trainer_on_one_node():
    text = (ROOT / "jobs" / "train.slurm").read_text()
    directives = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    assert subprocess.run(["bash", "-n", str(ROOT / "jobs" / "train.slurm")]).returncode == 0
    assert {"#SBATCH --nodes=1", "#SBATCH --gres=gpu:2"} <= set(directives)
    assert "CUDA_VISIBLE_DEVICES=0" in text and "CUDA_VISIBLE_DEVICES=1" in text


def test_train_slurm_names_a_missing_script_before_starting_anything():
    result = subprocess.run(["bash", "jobs/train.slurm", "train/nope.py"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2 and "no script 'train/nope.py'" in result.stderr


@pytest.mark.parametrize("script, needle", [("jobs/hf_job.py", "--submit"), ("jobs/serve_vllm.py", "--run")])
def test_help(script, needle):
    result = run(script, "--help")
    assert result.returncode == 0 and needle in result.stdout and "Not run" in result.stdout
