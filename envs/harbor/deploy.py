# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Deploy the harbor environment as a Hugging Face Space (Docker SDK).

Prints the plan by default: the files of the deploy bundle, the Space variables, the secrets
it needs by name (the variables are the harness Spaces' `multiharness.rollouts.SPACE_VARIABLES`). `--submit` creates or updates the Space and uploads the bundle; secrets are
never uploaded (set them in the Space's settings).

    python envs/harbor/deploy.py --repo my-org/multiharness-harbor            # the plan
    python envs/harbor/deploy.py --repo my-org/multiharness-harbor --submit   # needs HF_TOKEN
    python envs/harbor/deploy.py --repo my-org/multiharness-harbor --out /tmp/bundle   # keep the bundle
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the checkout, for `multiharness`, when run as a script

from multiharness.rollouts import SPACE_FILES, SPACE_VARIABLES  # noqa: E402
from multiharness.spaces import deploy  # noqa: E402

SECRETS = ["DAYTONA_API_KEY"]  # read only with MULTIHARNESS_SANDBOX=daytona

if __name__ == "__main__":
    deploy(HERE, __doc__, SPACE_VARIABLES, SECRETS, extra=(*SPACE_FILES, "requirements-harbor.txt"))
