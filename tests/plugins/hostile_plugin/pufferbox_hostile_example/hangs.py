"""Blocks at import (a network call without a timeout, a lock never released)."""

import time

time.sleep(3600)
