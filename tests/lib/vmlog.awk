# Parse the console log of a vmtest guest (tests/vmtest/init.sh).
#
# Counts the top-level TAP results of every test binary: "ok N ..." passes
# ("ok N ... # SKIP" is counted as skipped, and printed as a line
# "SKIPPED BINARY CASE # REASON" for the lane to judge), "not ok N ..."
# fails.  A binary that
# exited nonzero without a failing result, printed no result, or did not
# finish counts one more failure.  Prints one line per binary (with the
# figures a lane prints as "# fuzz: N calls ..." under it) and, last,
#   COUNTS <passed> <failed> <skipped> <done:0|1> <insmod rc|-> <binaries run> <final rmmod rc|->
{ gsub(/\r/, "") }

/^SNOWFLAKE-INSMOD rc=/ {
	insmod = substr($0, index($0, "rc=") + 3) + 0
	next
}
/^SNOWFLAKE-TEST-BEGIN / {
	cur = $2; inbin = 1; p = 0; f = 0; s = 0; fails = ""; totals = ""; figures = ""
	next
}
inbin && /^ok [0-9]+([ \t]|$)/ {
	if ($0 ~ /#[ \t]*(SKIP|skip)/) {
		s++
		# Each skip, for the lane's list of the skips it allows
		# (tests/vmtest/allowed-skips): "SKIPPED BINARY CASE # REASON".
		line = $0
		sub(/^ok [0-9]+[ \t]+/, "", line)
		skips = skips "\nSKIPPED " cur " " line
	} else
		p++
	next
}
inbin && /^not ok [0-9]+([ \t]|$)/ {
	f++
	fails = fails "\n      " $0
	next
}
inbin && /^# Totals:/ { totals = $0 }
inbin && /^# fuzz: [0-9]+ calls \(/ { figures = figures "\n      " $0 }
/^SNOWFLAKE-TEST-END / {
	rc = $3; sub(/^rc=/, "", rc); rc += 0
	secs = $4; sub(/^secs=/, "", secs)
	inbin = 0; extra = 0; note = ""
	if (p + f + s == 0) {
		extra = 1
		note = " -- printed no TAP result"
	} else if (rc != 0 && f == 0) {
		extra = 1
		note = " -- exited " rc " but reported no failure"
	}
	if (rc == 124 || rc == 137 || rc == 143)
		note = note " (killed: per-binary timeout)"
	P += p; F += f + extra; S += s; nrun++
	printf "  %-32s %d passed, %d failed, %d skipped, exit %d, %ss%s%s%s\n", \
		cur, p, f + extra, s, rc, secs, note, figures, fails
	next
}
/^SNOWFLAKE-RMMOD rc=/ {
	rmmod = substr($0, index($0, "rc=") + 3) + 0
	next
}
/^SNOWFLAKE-RMMOD \/dev/ { rmmod = "node-left-behind"; next }
/^SNOWFLAKE-VM-DONE/ { done = 1 }
END {
	if (inbin) {
		F++; nrun++
		printf "  %-32s did not finish (hang, timeout or crash): %d passed, %d failed before%s\n", \
			cur, p, f, fails
		P += p; F += f; S += s
	}
	if (skips != "")
		print substr(skips, 2)
	printf "COUNTS %d %d %d %d %s %d %s\n", P, F, S, done ? 1 : 0, \
		(insmod == "" ? "-" : insmod), nrun, (rmmod == "" ? "-" : rmmod)
}
