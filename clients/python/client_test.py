# SPDX-License-Identifier: LGPL-2.1-or-later
# scripts/clients-test.sh: IDS_FILE (the recorded IDs, decimal), the stream
# in $SNOWFLAKE_DEVICE, DECODED (the CLI's `decode --json` of them).
import errno, json, os, sys
sys.path.insert(0, os.path.dirname(__file__))
from snowflake_client import Snowflake, SnowflakeRefused, decode, describe

want = [int(x) for x in open(os.environ["IDS_FILE"])]
n = 0
def check(ok, what):
    global n
    n += 1
    print(("ok %d " if ok else "not ok %d ") % n + what)

with Snowflake() as sf:
    got = sf.next(len(want))
check(got == want, "python: %d IDs read as recorded, across short reads" % len(want))
cli = [json.loads(l) for l in open(os.environ["DECODED"])]
mine = [decode(int(c["id"])) for c in cli]
check(all({k: m[k] for k in c if k != "time"} == {k: c[k] for k in c if k != "time"}
          for m, c in zip(mine, cli)), "python: decode agrees with snowflake decode --json")
check("ENOTCONN" in describe(errno.ENOTCONN) and issubclass(SnowflakeRefused, OSError),
      "python: ENOTCONN is reported as refused (strict or fenced)")
