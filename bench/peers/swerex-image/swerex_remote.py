#!/usr/bin/python3
"""swerex-remote, as pip would make it, for swe-rex installed into /opt/swerex (Dockerfile)."""

import sys

sys.path.insert(0, "/opt/swerex")

from swerex.server import main  # noqa: E402

sys.exit(main())
