# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Deploy the whitebox environment as a Hugging Face Space (Docker SDK).

Prints the plan by default: the files of the deploy bundle, the Space variables, the secrets
it needs by name. `--submit` creates or updates the Space and uploads the bundle; secrets are
never uploaded (set them in the Space's settings).

    python envs/whitebox/deploy.py --repo my-org/multiharness-whitebox            # the plan
    python envs/whitebox/deploy.py --repo my-org/multiharness-whitebox --submit   # needs HF_TOKEN
    python envs/whitebox/deploy.py --repo my-org/multiharness-whitebox --out /tmp/bundle   # keep the bundle
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the checkout, for `multiharness`, when run as a script

from multiharness.spaces import deploy  # noqa: E402

VARIABLES = {
    "MULTIHARNESS_SANDBOX": "local",  # bubblewrap; "daytona" where the container forbids its namespaces
    "MAX_SESSIONS": "8",  # concurrent visitors, one sandbox each (a cpu-basic Space has 16 GB)
    "SESSION_SECONDS": "900",  # 15 minutes per session, then its sandbox is removed
}
SECRETS = ["DAYTONA_API_KEY"]  # read only with MULTIHARNESS_SANDBOX=daytona

if __name__ == "__main__":
    deploy(HERE, __doc__, VARIABLES, SECRETS)
