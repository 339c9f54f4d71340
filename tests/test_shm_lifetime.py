"""A shared-memory segment stays mapped while any view of it lives.

The overlap trainer's collector thread polls the workers' flags in the segment; on SIGTERM the main
thread closes the vector env under it. The segment used to be unmapped at once and the thread's next
read crashed the process (SIGSEGV instead of exit 143).
"""

import subprocess
import sys
import textwrap

import numpy as np

from pufferbox.vector.shm import SharedArrays

LAYOUT = {"flags": ((4,), np.dtype(np.int32)), "obs": ((8, 3), np.dtype(np.float32)), "none": ((0,), np.dtype(np.int8))}


def test_views_outlive_destroy_and_still_read_and_write():
    seg = SharedArrays.create(LAYOUT)
    flags, obs = seg.arrays["flags"], seg.arrays["obs"]
    flags[:] = 7
    seg.destroy()  # unlinked, but not unmapped under the views
    assert seg.arrays == {}
    assert flags.tolist() == [7, 7, 7, 7]
    obs[:] = 1.5
    assert float(obs.sum()) == 36.0


def test_a_thread_reading_the_segment_while_it_is_destroyed_does_not_crash():
    script = textwrap.dedent(
        """
        import threading, numpy as np
        from pufferbox.vector.shm import SharedArrays
        for _ in range(200):
            seg = SharedArrays.create({"flags": ((1024,), np.dtype(np.int32))})
            flags, go = seg.arrays["flags"], threading.Event()
            def poll():
                go.set()
                for _ in range(2000):
                    int(flags.sum())
            t = threading.Thread(target=poll)
            t.start(); go.wait()
            seg.destroy()
            t.join()
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr[-2000:]
