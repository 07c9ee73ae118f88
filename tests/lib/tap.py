# SPDX-License-Identifier: GPL-2.0
"""TAP lines and the closing count of the Python self-tests (the static
stage's report-test.py and fleet-test.py, the contract suite's selftest.py):
"ok N WHAT" / "not ok N WHAT", then "NAME: N passed, M failed" and exit
status 1 when any failed."""
import sys


class Tap:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, what, cond):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
        print("%s %d %s" % ("ok" if cond else "not ok", self.passed + self.failed, what))

    def finish(self, name):
        print("%s: %d passed, %d failed" % (name, self.passed, self.failed))
        sys.exit(1 if self.failed else 0)
