// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): leases in etcd (v3 API, through the JSON gateway of
 * etcd 3.4 and later: POST /v3/..., keys and values base64, 64-bit
 * integers as strings), with libcurl and json-c.  This file only speaks
 * etcd: what is done when a call fails or its outcome is unknown, and
 * whether anything is asked again, the engine decides (agent.c).
 *
 * The record store (ag_etcd_rec_ops, the backend of record.c's engine:
 * issue 40, docs/lease-record.md; its layout above rec_error()) on one
 * connection per request (post(), call(): the endpoints, the token) and
 * the strict parsers of store_parse.c.
 *
 * One request goes to one endpoint, once (post()): none is ever sent
 * again, to that endpoint or the next, by this file or by libcurl (a
 * fresh connection for every request: e_init()).  A request that gets no
 * answer, or an answer that its member cannot serve (gRPC 14, HTTP 5xx),
 * moves the endpoint the next request goes to.  Every request waits in
 * the engine's one wait, ag_wait(), through libcurl's multi interface:
 * it ends at its deadline (the fence time, or etcd-timeout-ms), name
 * lookup and connecting included, or at a stop signal.  The endpoint's
 * name is resolved by resolve_bounded() (that same wait) and handed to
 * libcurl (CURLOPT_RESOLVE): libcurl's own resolver thread is never used,
 * whose removal of a transfer joins a lookup that has not ended (the main
 * thread blocked for the resolver's own timeout, 30 s, a stop unseen:
 * issue 40 D9, contract scenario stop_within_1s).
 */
#define _GNU_SOURCE
#include "agent.h"

#ifdef AG_NO_ETCD
/* A build without libcurl and json-c (the static agent of the guest test). */
static int e_init(struct agent *a)
{
	(void)a;
	logm(AG_ERR, "backend etcd: this snowflake-agent was built without it");
	return AG_EXIT_USAGE;
}

const struct rec_ops ag_etcd_rec_ops = { .name = "etcd", .init = e_init };
#else
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "store_parse.h"

/* The largest reply read (on_data()); a longer one fails the call. */
#define REPLY_MAX	(1 << 20)
/* etcd's lease ids and revisions are int64, above 0. */
#define ID_MAX		((uint64_t)INT64_MAX)
/* post()'s *grpc_code when the request never left (no connection): not committed. */
#define NOT_SENT	(-2)

struct estore {
	CURL *h;			/* the one request's handle */
	CURLM *m;			/* ... driven by post() through ag_wait() */
	char **eps;			/* endpoints */
	int n_eps, cur;			/* cur: the endpoint the next request goes to */
	char auth[600];			/* "Authorization: token", "" none */
	char *body;			/* the response */
	size_t len;
};

static struct estore *E(const struct agent *a)
{
	return a->store;
}

static size_t on_data(char *p, size_t sz, size_t n, void *arg)
{
	struct estore *e = arg;
	size_t add = sz * n;
	char *nb;

	if (add > REPLY_MAX || e->len + add > REPLY_MAX)
		return 0;	/* libcurl fails the call: CURLE_WRITE_ERROR */
	nb = realloc(e->body, e->len + add + 1);
	if (!nb)
		return 0;
	memcpy(nb + e->len, p, add);
	e->body = nb;
	e->len += add;
	e->body[e->len] = '\0';
	return add;
}

static void b64(const char *in, char *out, size_t outlen)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = (const unsigned char *)in;
	size_t n = strlen(in), i, o = 0;

	for (i = 0; i < n && o + 5 < outlen; i += 3) {
		unsigned int v = s[i] << 16 | (i + 1 < n ? s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);

		out[o++] = t[v >> 18 & 63];
		out[o++] = t[v >> 12 & 63];
		out[o++] = i + 1 < n ? t[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? t[v & 63] : '=';
	}
	out[o] = '\0';
}

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v;

	/* Only a string: json-c would render a number or an object as one. */
	return o && json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string) ?
	       json_object_get_string(v) : NULL;
}

#define range_kv	ag_etcd_range_kv

/*
 * The endpoint just used failed (@why): said once for as long as etcd
 * stays down (the engine's ag_condition()), and the next request goes to
 * the next endpoint.  Nothing is sent again here.
 */
static void etcd_down(struct agent *a, const char *why)
{
	struct estore *e = E(a);

	ag_condition(a, AG_COND_STORE_DOWN, AG_WARN, "event=etcd_down endpoint=%s error=\"%s\"",
		     e->eps[e->cur], why);
	e->cur = (e->cur + 1) % e->n_eps;
}

/*
 * Run the request set up on e->h, by @end (boot_ns()), waiting in the
 * engine's ag_wait() on the sockets and the timer libcurl names
 * (curl_multi_fdset(), curl_multi_timeout()).  CURLE_OK or libcurl's
 * error; CURLE_OPERATION_TIMEDOUT at @end; CURLE_ABORTED_BY_CALLBACK at a
 * stop signal (*@stopped set).  The transfer is removed from the multi
 * handle in every case: its connection is closed, never used again.
 */
static CURLcode perform(struct agent *a, int64_t end, bool *stopped)
{
	struct estore *e = E(a);
	CURLcode res = CURLE_OK;
	CURLMsg *msg;
	int running = 1, left;

	*stopped = false;
	if (curl_multi_add_handle(e->m, e->h) != CURLM_OK)
		return CURLE_FAILED_INIT;
	for (;;) {
		struct pollfd p[8];
		fd_set rd, wr, ex;
		unsigned int n = 0;
		int maxfd = -1, fd, r;
		long tmo = -1;
		int64_t until = end;

		if (curl_multi_perform(e->m, &running) != CURLM_OK) {
			res = CURLE_FAILED_INIT;
			break;
		}
		if (!running)
			break;
		FD_ZERO(&rd);
		FD_ZERO(&wr);
		FD_ZERO(&ex);
		if (curl_multi_fdset(e->m, &rd, &wr, &ex, &maxfd) != CURLM_OK ||
		    curl_multi_timeout(e->m, &tmo) != CURLM_OK) {
			res = CURLE_FAILED_INIT;
			break;
		}
		for (fd = 0; fd <= maxfd && n < sizeof(p) / sizeof(p[0]); fd++) {
			short ev = (short)((FD_ISSET(fd, &rd) ? POLLIN : 0) |
					   (FD_ISSET(fd, &wr) ? POLLOUT : 0) |
					   (FD_ISSET(fd, &ex) ? POLLPRI : 0));

			if (ev)
				p[n++] = (struct pollfd){ .fd = fd, .events = ev };
		}
		/* No socket and no timer: asked again in 100 ms. */
		if (tmo < 0 && !n)
			tmo = 100;
		if (tmo >= 0 && boot_ns() + tmo * NS_PER_MS < until)
			until = boot_ns() + tmo * NS_PER_MS;
		r = ag_wait(p, n, until);
		if (r < 0) {
			*stopped = errno == ECANCELED;
			res = *stopped ? CURLE_ABORTED_BY_CALLBACK : CURLE_RECV_ERROR;
			break;
		}
		if (!r && boot_ns() >= end) {
			res = CURLE_OPERATION_TIMEDOUT;
			break;
		}
	}
	if (!running && res == CURLE_OK) {
		while ((msg = curl_multi_info_read(e->m, &left)))
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == e->h)
				res = msg->data.result;
	}
	curl_multi_remove_handle(e->m, e->h);
	return res;
}

/*
 * The host of endpoint @ep resolved within @ms (resolve_bounded(): the
 * engine's wait, a stop signal ends it): *@pin the CURLOPT_RESOLVE entry
 * (NULL for an address).  0, -ECANCELED (a stop signal), or another
 * negative errno with *@err said.
 */
static int pin_host(const char *ep, int64_t ms, struct curl_slist **pin, char *err, size_t len)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, addr[256], line[700];
	int r = -EINVAL;

	*pin = NULL;
	if (!u || curl_url_set(u, CURLUPART_URL, ep, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		snprintf(err, len, "%s: not a URL", ep);
		goto out;
	}
	r = 0;
	if (host[0] == '[')	/* an IPv6 address */
		goto out;
	r = resolve_bounded(host, ms, addr, sizeof(addr), err, len);
	if (r || !strcmp(addr, host))
		goto out;
	snprintf(line, sizeof(line), strchr(addr, ':') ? "%s:%s:[%s]" : "%s:%s:%s", host, port,
		 addr);
	*pin = curl_slist_append(NULL, line);
	if (!*pin) {
		snprintf(err, len, "out of memory");
		r = -ENOMEM;
	}
out:
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return r;
}

/*
 * POST @body to @path at the current endpoint, by @deadline (0: within
 * etcd-timeout-ms): one request, to one endpoint, never sent again.  The
 * parsed reply (caller puts it), or NULL with *@grpc_code the code etcd
 * answered with, -1 when it said none (no reply, a reply that cannot be
 * read, a stop signal: the request may have run), or NOT_SENT (no
 * connection: it never left).  No reply, gRPC 14 (unavailable, no
 * leader) or an HTTP 5xx: the next request goes to the next endpoint.
 */
static struct json_object *post(struct agent *a, int64_t deadline, const char *path,
				const char *body, int *grpc_code)
{
	struct estore *e = E(a);
	struct curl_slist *hdrs = NULL, *pin;
	struct json_object *j = NULL, *err = NULL, *c;
	const char *ep = e->eps[e->cur];
	int64_t t = ms_left(deadline, a->c->etcd_timeout_ms), end;
	char url[1024], why[512];
	bool stopped;
	long http = 0;
	CURLcode rc;
	int r;

	*grpc_code = NOT_SENT;
	if (!t)
		return NULL;
	end = boot_ns() + t * NS_PER_MS;
	r = pin_host(ep, t, &pin, why, sizeof(why));
	if (r == -ECANCELED) {
		logm(AG_DEBUG, "etcd %s%s: given up at a stop signal", ep, path);
		return NULL;
	}
	if (r) {
		etcd_down(a, why);
		return NULL;
	}
	t = ms_left(end, a->c->etcd_timeout_ms);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	if (e->auth[0])
		hdrs = curl_slist_append(hdrs, e->auth);
	snprintf(url, sizeof(url), "%s%s", ep, path);
	e->len = 0;
	if (e->body)
		e->body[0] = '\0';
	curl_easy_setopt(e->h, CURLOPT_URL, url);
	curl_easy_setopt(e->h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e->h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->h, CURLOPT_RESOLVE, pin);
	rc = perform(a, boot_ns() + t * NS_PER_MS, &stopped);
	curl_easy_setopt(e->h, CURLOPT_RESOLVE, NULL);
	curl_slist_free_all(pin);
	curl_slist_free_all(hdrs);
	if (rc != CURLE_OK) {
		if (rc != CURLE_COULDNT_CONNECT && rc != CURLE_COULDNT_RESOLVE_HOST)
			*grpc_code = -1;
		if (stopped)
			logm(AG_DEBUG, "etcd %s%s: given up at a stop signal", ep, path);
		else
			etcd_down(a, curl_easy_strerror(rc));
		return NULL;
	}
	*grpc_code = -1;
	curl_easy_getinfo(e->h, CURLINFO_RESPONSE_CODE, &http);
	j = e->body ? json_tokener_parse(e->body) : NULL;
	/* A stream (keep-alive) reports errors in its body. */
	if (http == 200 && j && !json_object_object_get_ex(j, "error", NULL)) {
		ag_condition_over(a, AG_COND_STORE_DOWN, "event=etcd_up endpoint=%s", ep);
		return j;
	}
	/* {"error": "...", "code": N} or, in a stream, {"error": {"code": N}} */
	if (j && (!json_object_object_get_ex(j, "error", &err) ||
		  !json_object_is_type(err, json_type_object)))
		err = j;
	if (err && json_object_object_get_ex(err, "code", &c))
		*grpc_code = json_object_get_int(c);
	logm(AG_DEBUG, "etcd %s%s: HTTP %ld: %.300s", ep, path, http, e->body ? e->body : "");
	json_object_put(j);
	/* 14 unavailable (no leader), HTTP 5xx: this member cannot serve; the next request goes to the next. */
	if (*grpc_code == 14 || (http >= 500 && *grpc_code < 0))
		etcd_down(a, e->body && e->body[0] ? e->body : "error");
	return NULL;
}

/* Authenticate (etcd-user): the token in e->auth.  false on failure (a->fatal on a refusal). */
static bool authenticate(struct agent *a, int64_t deadline)
{
	struct estore *e = E(a);
	struct json_object *req, *j;
	const char *tok;
	int code;

	e->auth[0] = '\0';
	req = json_object_new_object();
	json_object_object_add(req, "name", json_object_new_string(a->c->etcd_user));
	json_object_object_add(req, "password", json_object_new_string(a->c->etcd_password));
	j = post(a, deadline, "/v3/auth/authenticate", json_object_to_json_string(req), &code);
	json_object_put(req);
	if (!j) {
		if (code == 3 || code == 9 || code == 16) {
			logm(AG_ERR, "event=etcd_auth_failed user=%s: %s (etcd-user, etcd-password)",
			     a->c->etcd_user, E(a)->body ? E(a)->body : "refused");
			a->fatal = AG_EXIT_AUTH;
		}
		return false;
	}
	tok = jstr(j, "token");
	if (tok)
		snprintf(e->auth, sizeof(e->auth), "Authorization: %s", tok);
	json_object_put(j);
	return tok != NULL;
}

/*
 * post() with a token: authenticate first when there is none.  A token
 * refused (16, unauthenticated: it expired) fails the call, which did
 * not run, and the next call authenticates afresh; refused again, right
 * after authenticating, the agent stops (etcd-user, etcd-password).
 */
static struct json_object *call(struct agent *a, int64_t deadline, const char *path,
				const char *body, int *code)
{
	struct estore *e = E(a);
	struct json_object *j;
	bool fresh = false;

	*code = NOT_SENT;
	if (a->c->etcd_user && !e->auth[0]) {
		if (!authenticate(a, deadline))
			return NULL;
		fresh = true;
	}
	j = post(a, deadline, path, body, code);
	if (!j && a->c->etcd_user && *code == 16 && !fresh) {
		logm(AG_INFO, "etcd: the token was refused (expired): the next request authenticates again");
		e->auth[0] = '\0';
		return NULL;
	}
	/*
	 * 16 unauthenticated, or no user where one is needed: fatal.  7
	 * permission denied is not: etcd's RBAC grants a key, a range or a
	 * prefix, so it may refuse one pair's keys only (the caller's
	 * TRY_REFUSED: the walk moves on); a wrong password fails at
	 * authenticate(), fatal.
	 */
	if (!j && !a->fatal && (*code == 16 ||
				(e->body && strstr(e->body, "user name is empty")))) {
		logm(AG_ERR, "event=etcd_auth_failed: %s (etcd-user, etcd-password)",
		     e->body ? e->body : "unauthenticated");
		a->fatal = AG_EXIT_AUTH;
	}
	return j;
}

static int e_init(struct agent *a)
{
	struct estore *e;
	char *list = NULL, *tok, *save = NULL;

	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		logm(AG_ERR, "curl_global_init failed");
		return AG_EXIT_RUNTIME;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		goto oom;
	a->store = e;		/* freed by e_fini(), also on an error here */
	list = strdup(a->c->etcd_endpoints);
	if (!list)
		goto oom;
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char **n = realloc(e->eps, sizeof(*n) * (size_t)(e->n_eps + 1));
		size_t l;

		if (!n)
			goto oom;
		e->eps = n;
		e->eps[e->n_eps] = strdup(tok);
		if (!e->eps[e->n_eps])
			goto oom;
		l = strlen(e->eps[e->n_eps]);
		while (l && e->eps[e->n_eps][l - 1] == '/')
			e->eps[e->n_eps][--l] = '\0';
		e->n_eps++;
	}
	free(list);
	list = NULL;
	if (!e->n_eps) {
		logm(AG_ERR, "etcd-endpoints: no endpoint");
		return AG_EXIT_USAGE;
	}
	e->cur = (int)(boot_ns() % e->n_eps);
	e->h = curl_easy_init();
	e->m = curl_multi_init();
	if (!e->h || !e->m)
		goto oom;
	curl_easy_setopt(e->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e->h, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(e->h, CURLOPT_PROTOCOLS_STR, "http,https");
	/*
	 * Every request on a connection of its own: libcurl resends a request
	 * by itself when a reused connection closes before any reply (seen: a
	 * renewal whose reply was lost, sent again), never on a fresh one; so
	 * a lost reply is seen as lost (post(): the call fails, the engine
	 * decides), and no request is ever sent twice.
	 */
	curl_easy_setopt(e->h, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(e->h, CURLOPT_FORBID_REUSE, 1L);
	if (a->c->etcd_cacert)
		curl_easy_setopt(e->h, CURLOPT_CAINFO, a->c->etcd_cacert);
	if (a->c->etcd_cert) {
		curl_easy_setopt(e->h, CURLOPT_SSLCERT, a->c->etcd_cert);
		curl_easy_setopt(e->h, CURLOPT_SSLKEY, a->c->etcd_key);
	}
	return 0;
oom:
	free(list);
	logm(AG_ERR, "out of memory");
	return AG_EXIT_RUNTIME;
}

static void e_fini(struct agent *a)
{
	struct estore *e = E(a);
	int i;

	if (!e)
		return;
	if (e->m)
		curl_multi_cleanup(e->m);
	if (e->h)
		curl_easy_cleanup(e->h);
	for (i = 0; i < e->n_eps; i++)
		free(e->eps[i]);
	free(e->eps);
	free(e->body);
	free(e);
	a->store = NULL;
	curl_global_cleanup();
}

static void e_describe(const struct agent *a, char *buf, size_t len)
{
	snprintf(buf, len, "etcd=%s", a->c->etcd_endpoints);
}

static int64_t e_claim_wait(struct agent *a)
{
	(void)a;
	return 0;	/* etcd keeps its leases across restarts (its raft log) */
}

/* etcd's permission denied (RBAC: the user's roles leave this key out). */
#define PERMISSION_DENIED	7

/*
 * Layout.  Pair (DC, W)'s record is the key of 1.4.0's name (key_of():
 * PREFIX:CLUSTER:worker:DC:W), a plain key bound to no lease (it outlives
 * every agent), its value the record's text (base64 in the gateway's
 * JSON).  Its version is the key's mod_revision: etcd's own, the store-wide
 * revision of the write that last changed it, which never repeats, not
 * even after the key is deleted and created again (the revision only
 * grows), so a delayed write naming a version of a deleted record never
 * lands (ABA).  Nothing of the version is kept or counted here.
 *
 * read:  Range(key).  No key: RS_ABSENT.  Else RS_OK with the value
 *        decoded (at most AG_REC_MAX - 1 bytes, else the read fails) and
 *        its mod_revision; every number parsed strictly (a decimal string,
 *        above 0), a reply in any other form fails the read.
 * cas:   Txn If(ModRevision(key) == expect, Lease(key) == 0)
 *            Then(Put(key, text))
 *        (expect 0: If(CreateRevision(key) == 0), only where there is no
 *        key).  The Put binds no lease (a Put without one also unbinds
 *        any).  Committed ("succeeded": true): the new version is the
 *        reply header's revision, the Txn's own (its only write is the
 *        Put, so it is the key's mod_revision now), above @expect.  Not
 *        committed: RS_MOVED.  The compare and the write are one Txn, so
 *        atomic.
 *
 * 1.4.0's key at that name (a key bound to a lease, whose value is an
 * owner: never "sf2 ") is read as RS_OK with its text: the engine reads
 * an owner's form as a 1.4.0 agent's key, held by it (record.c,
 * REC_1_4_0), anything else as an invalid record, never served.  A key
 * bound to a lease whose value does begin "sf2 " (no agent writes one) is
 * read with "etcd-lease=ID " before its text, so that it too is never
 * taken as a record.  A key bound to a lease has a mod_revision like any
 * other, and the engine does compare-and-set over a record it could not
 * parse (a quarantine that has passed, --init-store --init-mark-ms: it
 * replaces the invalid text): the compare Lease(key) == 0 makes that cas
 * RS_MOVED, so no cas ever replaces 1.4.0's key; its pair is taken only
 * once its lease ended and the key is gone.  A plain key at that name
 * whose value is not a record (an operator's) is invalid, replaced only
 * as the engine says.
 *
 * 1.4.0's mark key (the rolling upgrade): legacy() is Range(mark key), its
 * text and mod_revision; create() is the cas of a new record with one
 * compare more, If(ModRevision(mark key) == as read) (0: still none), in
 * the same Txn.  The mark keys are left in place.
 *
 * Errors, as the rest of this file classes them (post(), e_claim()):
 *  - permission denied (gRPC 7: etcd's RBAC does not grant this pair's
 *    key): RS_REFUSED, this pair only (event=etcd_permission_denied);
 *  - resource exhausted (8: the database over its quota, NOSPACE; too many
 *    requests), refused before anything is proposed: RS_UNABLE;
 *  - unavailable (14: no leader, a request timed out, a leader lost) and
 *    deadline exceeded (4): a read RS_UNABLE (14) or RS_FAILED (4); a cas
 *    RS_UNKNOWN, since a proposal that timed out may still commit
 *    (e_claim()'s policy: not written only for an error etcd answered that
 *    is neither 14 nor 4);
 *  - another error etcd answered (the request did not run), or nothing
 *    sent (no connection; a stop signal before the request left; a token
 *    refused, asked afresh next time): RS_FAILED;
 *  - no reply, or a reply that cannot be read (an HTTP error without a
 *    code, garbage, too long, a stop signal while it was out): a read
 *    RS_FAILED, a cas RS_UNKNOWN (the engine reads its nonce back).
 * Assumed (as 1.4.0 assumes of its keys): nobody restores etcd from a
 * snapshot while agents run (etcdctl snapshot restore brings the revision
 * back, and revisions handed out after the snapshot would be handed out
 * again: the emergency procedure stops the agents first).
 */

/* A Range or Txn reply's error @code for pair key @key, as an RS_* (above). */
static int rec_error(struct agent *a, const char *key, int code, bool cas)
{
	struct estore *e = E(a);

	if (a->fatal || code == NOT_SENT)
		return RS_FAILED;
	if (code == PERMISSION_DENIED) {
		logm(AG_WARN, "event=etcd_permission_denied key=%s user=%s: etcd's RBAC does not grant this pair's record (permission denied): not run",
		     key, a->c->etcd_user ? a->c->etcd_user : "");
		return RS_REFUSED;
	}
	if (code == 8) {
		ag_condition(a, AG_COND_STORE_DOWN, AG_WARN,
			     "event=etcd_unable error=\"%.200s\": the store cannot run a write now (nothing ran)",
			     e->body ? e->body : "resource exhausted");
		return RS_UNABLE;
	}
	if (code == 14 || code == 4 || code < 0)
		return cas ? RS_UNKNOWN : code == 14 ? RS_UNABLE : RS_FAILED;
	logm(AG_WARN, "event=etcd_error key=%s code=%d error=\"%.200s\"", key, code,
	     e->body ? e->body : "");
	return RS_FAILED;
}

/*
 * Range(@key), one key: RS_OK with *@j (the reply: the caller puts it),
 * *@kv its key-value, *@rev its mod_revision (above 0) and *@lease its
 * lease (0: none); RS_ABSENT; or the call's failure (rec_error(); a reply
 * in any other form: RS_FAILED, said).  Every number parsed strictly, and
 * count and kvs agree: both left out (no key), or 1 and one key-value.
 */
static int range_one(struct agent *a, int64_t deadline, const char *key, struct json_object **j,
		     struct json_object **kv, uint64_t *rev, uint64_t *lease)
{
	struct json_object *kvs = NULL;
	char k64[700], body[800];
	uint64_t count = 0;
	int code, cv;
	size_t nkv;

	*rev = *lease = 0;
	b64(key, k64, sizeof(k64));
	snprintf(body, sizeof(body), "{\"key\":\"%s\"}", k64);
	*j = call(a, deadline, "/v3/kv/range", body, &code);
	if (!*j)
		return rec_error(a, key, code, false);
	cv = ag_etcd_u64(*j, "count", ID_MAX, &count);
	nkv = json_object_object_get_ex(*j, "kvs", &kvs) && json_object_is_type(kvs, json_type_array) ?
	      json_object_array_length(kvs) : 0;
	if (cv == AG_VAL_INVALID || count > 1 || count != nkv ||
	    (kvs && !json_object_is_type(kvs, json_type_array)))
		goto bad;
	if (!count) {
		json_object_put(*j);
		*j = NULL;
		return RS_ABSENT;
	}
	*kv = range_kv(*j);
	if (!*kv || ag_etcd_u64(*kv, "mod_revision", ID_MAX, rev) != AG_VAL_OK || !*rev ||
	    ag_etcd_u64(*kv, "lease", ID_MAX, lease) == AG_VAL_INVALID)
		goto bad;
	return RS_OK;
bad:
	ag_reply_invalid(a, "etcd range of one key", json_object_to_json_string(*j),
			 strlen(json_object_to_json_string(*j)));
	json_object_put(*j);
	*j = NULL;
	return RS_FAILED;
}

/*
 * @kv's value decoded into @out (@len bytes, NUL-terminated; a key with an
 * empty value: the gateway leaves "value" out): its length, -1 when it is
 * not a string (a reply in another form), -2 when not base64 or too long.
 */
static long kv_value(struct json_object *kv, char *out, size_t len)
{
	struct json_object *v;
	long n;

	out[0] = '\0';
	if (!json_object_object_get_ex(kv, "value", &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -1;
	n = ag_unb64(json_object_get_string(v), (size_t)json_object_get_string_len(v), out, len);
	return n < 0 ? -2 : n;
}

static int er_read(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline, struct ag_rec *out)
{
	struct json_object *j = NULL, *kv = NULL;
	char key[512];
	uint64_t rev, lease;
	long n;
	int st;

	key_of(a, dc, w, key, sizeof(key));
	st = range_one(a, deadline, key, &j, &kv, &rev, &lease);
	if (st != RS_OK)
		return st;
	n = kv_value(kv, out->text, sizeof(out->text));
	if (n < 0) {
		ag_reply_invalid(a, "etcd record value (not a base64 string, or longer than a record)",
				 json_object_to_json_string(kv), strlen(json_object_to_json_string(kv)));
		json_object_put(j);
		return RS_FAILED;
	}
	out->len = (size_t)n;
	if (lease && out->len >= 4 && !memcmp(out->text, "sf2 ", 4)) {
		/* A record's text bound to a lease: no agent writes one; never a record. */
		char tag[40];
		int tl = snprintf(tag, sizeof(tag), "etcd-lease=%llu ", (unsigned long long)lease);
		size_t keep = out->len + (size_t)tl < sizeof(out->text) ?
			      out->len : sizeof(out->text) - 1 - (size_t)tl;

		memmove(out->text + tl, out->text, keep);
		memcpy(out->text, tag, (size_t)tl);
		out->len = keep + (size_t)tl;
		out->text[out->len] = '\0';
	}
	out->version = rev;
	json_object_put(j);
	return RS_OK;
}

/* A cas (@leg NULL), or a create only while 1.4.0's mark key is at @leg's mod_revision. */
static int er_write(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, const char *text,
		    size_t len, int64_t deadline, uint64_t *version, const struct ag_legacy *leg)
{
	struct json_object *j, *hdr = NULL;
	char key[512], k64[700], txt[AG_REC_MAX], v64[AG_REC_MAX / 3 * 4 + 8], cmp[2400], *body;
	char mkey[512], m64[700];
	uint64_t rev = 0;
	int code, sv;
	bool ok;

	/* b64() reads to the NUL: a text with one is not a record's. */
	if (expect > ID_MAX || len >= sizeof(txt) || memchr(text, '\0', len))
		return RS_FAILED;
	memcpy(txt, text, len);
	txt[len] = '\0';
	key_of(a, dc, w, key, sizeof(key));
	b64(key, k64, sizeof(k64));
	b64(txt, v64, sizeof(v64));
	mark_key_of(a, dc, w, mkey, sizeof(mkey));
	b64(mkey, m64, sizeof(m64));
	if (!expect && leg)
		snprintf(cmp, sizeof(cmp),
			 "{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"CREATE\",\"create_revision\":\"0\"},"
			 "{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"MOD\",\"mod_revision\":\"%llu\"}",
			 k64, m64, (unsigned long long)leg->guard);
	else if (!expect)
		snprintf(cmp, sizeof(cmp),
			 "{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"CREATE\",\"create_revision\":\"0\"}",
			 k64);
	else
		snprintf(cmp, sizeof(cmp),
			 "{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"MOD\",\"mod_revision\":\"%llu\"},"
			 "{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"LEASE\",\"lease\":\"0\"}",
			 k64, (unsigned long long)expect, k64);
	if (asprintf(&body, "{\"compare\":[%s],\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}]}",
		     cmp, k64, v64) < 0)
		return RS_FAILED;
	j = call(a, deadline, "/v3/kv/txn", body, &code);
	free(body);
	if (!j)
		return rec_error(a, key, code, true);
	/*
	 * "succeeded" a boolean (left out: false) and the header's revision, a
	 * decimal above 0; committed, the Txn's own, above @expect (the
	 * revision never goes back): else a reply that says nothing sure,
	 * unknown (read back by the engine).
	 */
	sv = ag_etcd_succeeded(j, &ok);
	json_object_object_get_ex(j, "header", &hdr);
	if (sv == AG_VAL_INVALID || ag_etcd_u64(hdr, "revision", ID_MAX, &rev) != AG_VAL_OK ||
	    !rev || (ok && rev <= expect)) {
		ag_reply_invalid(a, "etcd record cas reply", json_object_to_json_string(j),
				 strlen(json_object_to_json_string(j)));
		json_object_put(j);
		return RS_UNKNOWN;
	}
	json_object_put(j);
	if (!ok)
		return RS_MOVED;
	*version = rev;
	return RS_OK;
}

static int er_cas(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, const char *text,
		  size_t len, int64_t deadline, uint64_t *version)
{
	return er_write(a, dc, w, expect, text, len, deadline, version, NULL);
}

static int er_create(struct agent *a, uint32_t dc, uint32_t w, const struct ag_legacy *m,
		     const char *text, size_t len, int64_t deadline, uint64_t *version)
{
	return er_write(a, dc, w, 0, text, len, deadline, version, m);
}

/*
 * 1.4.0's mark key: Range(mark key).  None: AG_LEG_NONE, guard 0 (a
 * compare of a missing key's mod_revision with 0 holds); else its text
 * (AG_LEG_MARK; AG_LEG_OTHER "long" or "not-a-string" when it is no
 * shorter than a record, or not base64, or not a string) and its
 * mod_revision, the guard create() compares.
 */
static int er_legacy(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline,
		     struct ag_legacy *m)
{
	struct json_object *j = NULL, *kv = NULL;
	char mkey[512];
	uint64_t rev, lease;
	long n;
	int st;

	memset(m, 0, sizeof(*m));
	mark_key_of(a, dc, w, mkey, sizeof(mkey));
	st = range_one(a, deadline, mkey, &j, &kv, &rev, &lease);
	if (st == RS_ABSENT)
		return RS_OK;
	if (st != RS_OK)
		return st;
	n = kv_value(kv, m->text, sizeof(m->text));
	m->state = n < 0 ? AG_LEG_OTHER : AG_LEG_MARK;
	m->guard = rev;
	if (n < 0)
		n = snprintf(m->text, sizeof(m->text), "%s", n == -1 ? "not-a-string" : "long");
	m->len = (size_t)n;
	json_object_put(j);
	return RS_OK;
}

const struct rec_ops ag_etcd_rec_ops = {
	.name = "etcd",
	.init = e_init,
	.fini = e_fini,
	.describe = e_describe,
	.claim_wait = e_claim_wait,
	.read = er_read,
	.cas = er_cas,
	.legacy = er_legacy,
	.create = er_create,
};
#endif /* AG_NO_ETCD */
