# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The harbor environment's server: environment, playground and app wiring."""
