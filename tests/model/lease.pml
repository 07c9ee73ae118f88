/*
 * The lease protocol of snowflake-agent(8) as a Promela model (issue 41,
 * item 3; the protocol of issue 40): 3 agents, 2 pairs, a network that
 * loses, duplicates, delays and reorders requests and replies, crashes and
 * restarts, and the drift bound of the deployment docs.  Checked by spin
 * (tests/model/run.sh, `make model`).  Two stores, one compile-time switch:
 *
 *   (default)  the record protocol (issue 40): one record per pair holding
 *              owner, the claim's nonce and the mark; every write (claim,
 *              raise, release) a compare-and-set on the record's version;
 *              expiry judged by the observer: the record seen unchanged
 *              (the same version twice) and the holder's deadline passed;
 *              an unknown outcome resolved by reading the record back (our
 *              nonce = committed).
 *   -DKEYVER   today's ZooKeeper store (userspace/agent/zookeeper.c, its
 *              header's G4 and renew_key()/raise_mark()): an ephemeral key
 *              node and a persistent mark node; the raise is
 *              multi(check(key, key_version), setData(mark, version known)),
 *              and a key node created again has data version 0 as the old
 *              one had, so the check passes on another holder's key; a
 *              setData refused on the version reads the mark again and
 *              writes over a foreign, lower mark (at most 3 rounds).
 *
 * Names: the labels and inlines are the engine's (agent.c): acquire,
 * claim_one, lease_taken, serve, renew, release, resolve_unknown,
 * lease_lost; the store's operations are those of zookeeper.c (prove,
 * raise_mark) or of issue 40's record (read, compare-and-set).
 *
 * What is abstracted, and why it is sound for the properties:
 * - Timestamps: a mark is a number 0..NM-1.  A holder's window is
 *   [floor, ceiling]: floor = the mark read at its claim + 1 (lease_taken),
 *   ceiling = the mark it raised and saw committed (renew).  The value of a
 *   raise is the holder's clock (agent.c renew(): next + mark-step-ms), so
 *   any value above its current ceiling: chosen here, one or two steps up.
 * - Time and drift: no clock is kept.  The docs' assumption
 *   (docs/deployment-etcd.md, -redis.md, -zookeeper.md: "the drift over
 *   one TTL stays below margin") makes this true: a holder fences at
 *   sent + ttl - margin on its clock, an observer takes over only after
 *   seeing the record unchanged for ttl + margin on its own, counted from
 *   a reply that came after the holder's write, which came after its
 *   `sent`; rates differ by less than margin over one TTL, so every
 *   observer's expiry comes after the holder's deadline.  Here: an expiry
 *   (expiry_ok) is possible only when no running agent holds the pair,
 *   and a holder's deadline passes (lease_lost) only after a renewal that
 *   did not come back committed (renewals are answered in time
 *   otherwise: renew-ms + timeout < ttl - margin is checked at start).
 *   ZooKeeper's settle (one TTL after the claim) is the same predicate.
 * - Renewals without a raise change no state of the model and are left
 *   out; a holder whose mark reached NM-1 keeps serving.
 * - Faults are budgets (LOSS, DUP, CRASH, STOP, KEYDEL): any schedule of
 *   that many faults, anywhere.
 *
 * -DTWO runs agents 0 and 1 only (a smaller model to read a trail by).
 *
 * Properties: the assertion in extend() (no two holders' windows of one
 * pair share a timestamp) and in serve() (no two holders serve one pair at
 * once), and the LTL property `live`: every pair is served at some time
 * (with a finite number of faults, under weak fairness).
 */

#define NA	3	/* agents */
#define NP	2	/* pairs */
#ifndef NM
#define NM	5	/* mark values 0..NM-1 */
#endif
#ifndef MAXCL
#define MAXCL	3	/* claims per agent (a nonce is 1..MAXCL) */
#endif

#ifndef LOSS
#define LOSS	2
#endif
#ifndef DUP
#define DUP	1
#endif
#ifndef CRASH
#define CRASH	1
#endif
#ifndef STOP
#define STOP	1
#endif
#ifndef KEYDEL
#define KEYDEL	1
#endif

/* Committed, not committed (refused on the version), unknown. */
#define C_OK	1
#define C_NO	2
#define C_KEY	3	/* KEYVER: the multi failed on its key check (step 0) */

#define COPY(d, s)	d.kind = s.kind; d.p = s.p; d.ver = s.ver; d.val = s.val; d.who = s.who

mtype = { NONE, CLAIM, RAISE, GIVEBACK };

typedef req {
	mtype kind;
	byte p;
	byte ver;	/* the version the compare-and-set expects */
	byte val;	/* CLAIM: the nonce; RAISE: the new mark */
	byte who;	/* the writer: agent * 8 + nonce */
};

/* The network: each agent's request in flight, and one it gave up on. */
req cur[NA];
req stale[NA];
byte rep[NA];		/* the reply to cur (0 none yet) */
byte loss = LOSS, dup = DUP, crashes = CRASH, stops = STOP, keydel = KEYDEL;

#ifndef KEYVER
/* The record of each pair (issue 40). */
byte r_ver[NP];
byte r_who[NP];		/* owner * 8 + nonce; 0 free */
byte r_mark[NP];
#else
/* zookeeper.c: the key node (its data version is always 0) and the mark node. */
byte k_who[NP];		/* the session that created the key: agent * 8 + nonce; 0 none */
byte m_val[NP];
byte m_ver[NP];
byte m_who[NP];		/* the mark's owner text: the run that wrote it */
#endif

/* The agents, as the checker sees them. */
bool alive[NA];
bool holds[NA];		/* a lease whose deadline has not passed */
bool serving[NA];
byte hp[NA];		/* the pair held */
byte crash[NA];		/* a crash asked for */

/* Windows: stamp[p * NM + t] = the window (agent * 8 + nonce) that holds t. */
byte stamp[NP * NM];
bool ever[NP];

/* The agent's scratch variables, cleared where they are dead (fewer states). */
#define CLEAR	rv = 0; rw = 0; rm = 0; kw = 0; res = 0; t = 0; tries = 0; target = 0

#define WHO(a, n)	((a) * 8 + (n))

/* Any running agent holding pair q (the drift predicate above). */
#define held_by_other(q, me)	((alive[0] && holds[0] && hp[0] == (q) && (me) != 0) || \
				 (alive[1] && holds[1] && hp[1] == (q) && (me) != 1) || \
				 (alive[2] && holds[2] && hp[2] == (q) && (me) != 2))
#define expiry_ok(q, me)	(!held_by_other(q, me))

/* The window of w on pair q grows to [lo, hi]: no timestamp of another's. */
inline extend(q, w, lo, hi)
{
	t = lo;
	do
	:: t <= hi ->
		assert(stamp[q * NM + t] == 0 || stamp[q * NM + t] == w);
		stamp[q * NM + t] = w;
		t++
	:: else -> break
	od;
	ever[q] = true
}

/* The store applies one request (atomically, as its commit is). */
inline apply(r, res)
{
#ifndef KEYVER
	if
	:: r.ver == r_ver[r.p] ->
		if
		:: r.kind == CLAIM -> r_who[r.p] = r.who
		:: r.kind == RAISE -> r_mark[r.p] = r.val
		:: r.kind == GIVEBACK -> r_who[r.p] = 0
		fi;
		r_ver[r.p]++;
		res = C_OK
	:: else -> res = C_NO
	fi
#else
	if
	:: r.kind == CLAIM ->
		/* multi(create(key, EPHEMERAL), check(mark, version read)) */
		if
		:: k_who[r.p] == 0 && m_ver[r.p] == r.ver -> k_who[r.p] = r.who; res = C_OK
		:: else -> res = C_NO
		fi
	:: r.kind == RAISE ->
		/* multi(check(key, key_version = 0), setData(mark, z->mark_version)):
		 * the check passes on any key node, another session's too. */
		if
		:: k_who[r.p] == 0 -> res = C_KEY
		:: k_who[r.p] != 0 && m_ver[r.p] != r.ver -> res = C_NO
		:: k_who[r.p] != 0 && m_ver[r.p] == r.ver ->
			m_val[r.p] = r.val; m_ver[r.p]++; m_who[r.p] = r.who; res = C_OK
		fi
	:: r.kind == GIVEBACK ->
		/* give_back: delete(key) if ours */
		if
		:: k_who[r.p] == r.who -> k_who[r.p] = 0; res = C_OK
		:: else -> res = C_NO
		fi
	fi
#endif
}

inline deliver(i)
{
	atomic {
		if
		:: cur[i].kind != NONE ->
			apply(cur[i], res);
			if
			:: rep[i] = res
			:: loss > 0 -> loss--; printf("network: agent %d's reply lost\n", i)
			fi;
			if
			:: dup > 0 && stale[i].kind == NONE ->
				dup--; COPY(stale[i], cur[i]); printf("network: agent %d's request duplicated\n", i)
			:: true
			fi;
			cur[i].kind = NONE; res = 0
		:: cur[i].kind != NONE && loss > 0 -> loss--; cur[i].kind = NONE; printf("network: agent %d's request lost\n", i)
		:: stale[i].kind != NONE ->
			apply(stale[i], res);	/* late: its reply is answered to nobody */
			printf("network: agent %d's abandoned request delivered late: %d\n", i, res);
			stale[i].kind = NONE; res = 0
		:: stale[i].kind != NONE && loss > 0 -> loss--; stale[i].kind = NONE
		fi
	}
}

/* The network: delivers, loses, duplicates, in any order. */
proctype network()
{
	byte res;
end:
	do
	:: deliver(0)
	:: deliver(1)
	:: deliver(2)
	od
}

/* The crashes and stops: any agent, at any step, within the budget. */
proctype faults()
{
end:
	do
	:: atomic { crashes > 0 && alive[0] && crash[0] == 0 -> crashes--; crash[0] = 1; printf("agent 0: crashes\n") }
	:: atomic { crashes > 0 && alive[1] && crash[1] == 0 -> crashes--; crash[1] = 1; printf("agent 1: crashes\n") }
	:: atomic { crashes > 0 && alive[2] && crash[2] == 0 -> crashes--; crash[2] = 1; printf("agent 2: crashes\n") }
	:: atomic { stops > 0 && serving[0] && crash[0] == 0 -> stops--; crash[0] = 2; printf("agent 0: stopped (SIGTERM)\n") }
	:: atomic { stops > 0 && serving[1] && crash[1] == 0 -> stops--; crash[1] = 2; printf("agent 1: stopped (SIGTERM)\n") }
	:: atomic { stops > 0 && serving[2] && crash[2] == 0 -> stops--; crash[2] = 2; printf("agent 2: stopped (SIGTERM)\n") }
#ifdef KEYVER
	/* A key deleted under its holder (an operator; a session expired by the
	 * ensemble), the hidden failure of issue 11 and of D1. */
	:: atomic { keydel > 0 && k_who[0] != 0 -> keydel--; k_who[0] = 0; printf("store: pair 0's key deleted (an operator)\n") }
	:: atomic { keydel > 0 && k_who[1] != 0 -> keydel--; k_who[1] = 0; printf("store: pair 1's key deleted (an operator)\n") }
	:: atomic { k_who[0] != 0 && expiry_ok(0, 255) -> k_who[0] = 0; printf("store: pair 0's session expired\n") }
	:: atomic { k_who[1] != 0 && expiry_ok(1, 255) -> k_who[1] = 0; printf("store: pair 1's session expired\n") }
#endif
	od
}

/*
 * One request and its wait (the engine's one wait, ag_wait()): C_OK, C_NO,
 * C_KEY, or 0 unknown: no reply by the deadline (the request lost, its
 * reply lost, or slow: then it is abandoned and may still land).
 */
inline send_wait(k, q, v, x, res)
{
	atomic {
		if
		:: stale[me].kind == NONE -> skip
		:: else -> stale[me].kind = NONE	/* an older abandoned one: overtaken, dropped */
		fi;
		cur[me].kind = k; cur[me].p = q; cur[me].ver = v; cur[me].val = x;
		cur[me].who = WHO(me, nonce);
		rep[me] = 0
	};
	atomic {
		if
		:: rep[me] != 0 -> res = rep[me]; rep[me] = 0
		:: rep[me] == 0 && cur[me].kind == NONE -> res = 0	/* lost: the deadline */
		:: rep[me] == 0 && cur[me].kind != NONE && loss > 0 ->	/* slow: abandoned */
			loss--; COPY(stale[me], cur[me]); cur[me].kind = NONE;
			res = 0
		fi
	}
}

proctype agent(byte me)
{
	byte nonce = 0;
	byte q, i, start, res, t;
	byte floor, mark, ver, target, tries;
	byte seen[NP];		/* a record's version seen last, + 1 (0: none) */
	bool unknown;
	byte uq, un;		/* the claim whose outcome is unknown, and its nonce */
	byte rv, rw, rm;	/* a read: version, owner/nonce, mark */
	byte kw;		/* KEYVER: the key's owner */

restart:
	atomic {
		alive[me] = true; holds[me] = false; serving[me] = false;
		unknown = false; seen[0] = 0; seen[1] = 0
	};
	{
	skip;
acquire:
	/* agent.c acquire(): resolve_unknown() first, then a walk of the pool. */
	if
	:: unknown ->
resolve_unknown:
		/* Read the record back: our nonce in it = the claim committed;
		 * then given back (resolve_unknown()'s give_back). */
#ifndef KEYVER
		atomic { rv = r_ver[uq]; rw = r_who[uq] };
#else
		atomic { rw = k_who[uq]; rv = 0 };
#endif
		if
		:: rw == WHO(me, un) ->
			printf("agent %d: resolve_unknown: pair %d's claim had committed: given back\n", me, uq);
			t = nonce; nonce = un;
			send_wait(GIVEBACK, uq, rv, 0, res);
			nonce = t;
			if
			:: res == 0 -> atomic { CLEAR }; goto acquire	/* asked again */
			:: else -> unknown = false
			fi
		:: else -> unknown = false	/* had not committed */
		fi;
		atomic { CLEAR };
		goto acquire
	:: else -> skip
	fi;
	if
	:: nonce >= MAXCL -> goto done	/* the model's bound on claims */
	:: else -> skip
	fi;
	/* a random start, then every pair of the pool */
	if
	:: start = 0
	:: start = 1
	fi;
	i = 0;
	do
	:: i < NP ->
		q = (start + i) % NP;
		i++;
claim_one:
#ifndef KEYVER
		atomic { rv = r_ver[q]; rw = r_who[q]; rm = r_mark[q] };
		if
		:: rw != 0 && (seen[q] != rv + 1 || !expiry_ok(q, me)) ->
			seen[q] = rv + 1;	/* held: first sighting, or renewed since */
			goto next
		:: else -> skip		/* free, or expired: unchanged since seen */
		fi;
#else
		/* sync; get(mark); exists(key) */
		atomic { kw = k_who[q]; rv = m_ver[q]; rm = m_val[q] };
		if
		:: kw != 0 -> goto next
		:: else -> skip
		fi;
#endif
		nonce++;
		send_wait(CLAIM, q, rv, nonce, res);
		if
		:: res == C_OK -> goto lease_taken
		:: res == 0 ->
			/* TRY_UNKNOWN: maybe committed */
			unknown = true; uq = q; un = nonce;
			goto acquire
		:: else -> skip		/* TRY_HELD: the next pair */
		fi;
next:
		atomic { CLEAR }
	:: else -> break
	od;
	atomic { CLEAR; i = 0; start = 0; q = 0 };
	goto acquire;	/* pool_full: the walk again after the backoff */

lease_taken:
	/* floor = the mark read at the claim + 1; the ceiling none yet. */
	atomic {
		floor = rm + 1; mark = rm; ver = rv + 1; hp[me] = q; holds[me] = true;
		seen[q] = 0;
#ifdef KEYVER
		ver = rv;	/* z->mark_version: the mark's version the claim checked */
#endif
		printf("agent %d: claim_one: pair %d claimed (nonce %d): mark read %d, floor %d\n", me, q, nonce, rm, floor);
		CLEAR; i = 0; start = 0
	};
	/* KEYVER: settle-ms (one TTL): the earlier holder's deadline passed. */
settle:
#ifdef KEYVER
	expiry_ok(q, me);
#endif

serve:
renew:
	/* agent.c renew(): a raise above the ceiling, a compare-and-set. */
	if
	:: mark + 1 < NM -> target = mark + 1
	:: mark + 2 < NM -> target = mark + 2
	:: mark + 1 >= NM ->
		/* Renewals without a raise: no state of the model changes. */
end_serving:
		(false)
	fi;
	if
	:: target < floor -> target = floor
	:: else -> skip
	fi;
#ifndef KEYVER
	send_wait(RAISE, q, ver, target, res);
	if
	:: res == C_OK -> ver++
	:: else ->
		/* Not committed, or unknown: the record read back; our nonce in
		 * it = ours (an abandoned raise of ours may have landed). */
		atomic { rv = r_ver[q]; rw = r_who[q]; rm = r_mark[q] };
		if
		:: rw == WHO(me, nonce) && rm >= target -> ver = rv	/* ours, and raised */
		:: rw == WHO(me, nonce) && rm < target -> ver = rv; goto renew_failed
		:: else -> goto lease_lost	/* not ours: taken over */
		fi
	fi;
#else
	/* prove(): sync; exists(key): its ephemeralOwner is our session */
	if
	:: k_who[q] != WHO(me, nonce) -> goto lease_lost
	:: else -> skip
	fi;
	tries = 0;
	do
	:: tries < 3 ->
		tries++;
raise_mark:
		send_wait(RAISE, q, ver, target, res);
		if
		:: res == C_OK -> ver = ver + 1; break
		:: res == C_KEY -> goto lease_lost	/* zk_drop_session */
		:: res == 0 -> goto renew_failed
		:: res == C_NO ->
			/* The mark read again; a foreign, lower one overwritten. */
			atomic { rv = m_ver[q]; rm = m_val[q]; rw = m_who[q] };
			if
			:: rw != WHO(me, nonce) && rm < target ->
				printf("agent %d: raise_mark: pair %d's mark %d is another's and lower: written over at its version %d\n", me, q, rm, rv);
				ver = rv
			:: rw != WHO(me, nonce) && rm >= target -> goto lease_lost	/* mark_taken */
			:: rw == WHO(me, nonce) && rm >= target -> ver = rv; break
			:: rw == WHO(me, nonce) && rm < target -> ver = rv
			fi
		fi
	:: else -> goto renew_failed
	od;
#endif
	/* Committed and seen: the new ceiling. */
	atomic {
		printf("agent %d: renew: raise of pair %d to %d committed: window [%d, %d]\n", me, q, target, floor, target);
		extend(q, WHO(me, nonce), floor, target);
		mark = target;
		/* serve(): the device programmed: nobody else serves the pair. */
		assert(!(serving[0] && hp[0] == q && me != 0) &&
		       !(serving[1] && hp[1] == q && me != 1) &&
		       !(serving[2] && hp[2] == q && me != 2));
		serving[me] = true;
		CLEAR
	};
	goto renew;

renew_failed:
	/* Retried at the next step, or the deadline passes first. */
	if
	:: goto renew
	:: skip
	fi;
lease_lost:
	/* fence_now(); held = false; the walk again */
	atomic { printf("agent %d: lease_lost: pair %d\n", me, q); serving[me] = false; holds[me] = false; CLEAR; q = 0 };
	goto acquire;

done:
end_done:
	(false)
	} unless {
		crash[me] != 0
	};
	/* A crash (crash = 1) or a stop (2: the fence, then release()). */
	if
	:: crash[me] == 2 && holds[me] ->
		atomic { serving[me] = false; holds[me] = false };	/* fenced first */
release:
		/* the version we hold (record), the key's delete if ours (KEYVER) */
		send_wait(GIVEBACK, hp[me], ver, 0, res)
	:: else -> skip
	fi;
	atomic {
		alive[me] = false; serving[me] = false; holds[me] = false; crash[me] = 0;
		if
		:: cur[me].kind != NONE && stale[me].kind == NONE ->
			/* the request in flight lives on in the network */
			COPY(stale[me], cur[me]); cur[me].kind = NONE
		:: else -> cur[me].kind = NONE
		fi;
		rep[me] = 0
	};
	goto restart
}

init
{
	atomic {
		run network();
		run faults();
		run agent(0);
		run agent(1)
#ifndef TWO
		; run agent(2)
#endif
	}
}

/* Liveness: every pair is served at some time. */
ltl live { <> (ever[0] && ever[1]) }
