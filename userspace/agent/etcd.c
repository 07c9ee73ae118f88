// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): leases in etcd (v3 API, through the JSON gateway of
 * etcd 3.4 and later: POST /v3/..., keys and values base64, 64-bit
 * integers as strings), with libcurl and json-c.  This file only speaks
 * etcd: what is done when a call fails or its outcome is unknown, and
 * whether anything is asked again, the engine decides (agent.c).
 *
 * Two designs live here while the agent moves (issue 40): 1.4.0's key,
 * mark and lease (ag_etcd_ops, this comment), and the record design's
 * backend (ag_etcd_rec_ops: its layout above rec_error(), at the end),
 * which share the connection (post(), call(): the endpoints, the token)
 * and the parsers.
 *
 * The model is etcd's own clientv3/concurrency: one lease (LeaseGrant,
 * TTL = ceil(ttl-ms / 1000) s), the pair's key created only if absent and
 * bound to the lease, and only if the pair's timestamp mark (the key
 * PREFIX:CLUSTER:mark:DC:W, bound to no lease) is still as a first read
 * found it, valid, which the same Txn reads back (G1, G4 in agent.h):
 *
 *   Txn If(CreateRevision(key) == 0, ModRevision(mark) == as read)
 *       Then(Put(key, owner, lease), Range(mark))
 *
 * (see e_claim(): a missing or invalid mark is written only with
 * init_mark, over the very text read).  Its outcome unknown, a claim is
 * TRY_UNKNOWN, and the engine gives the key back before its next step
 * (give_back(): a Txn that deletes the key only while it holds our owner;
 * agent.c resolve_unknown()).
 *
 * The lease is kept with LeaseKeepAlive.  A keep-alive proves only that
 * the lease lives, not that the key is still bound to it (an operator's
 * `etcdctl del --prefix` leaves the lease alive): so every renewal also
 * proves the key itself, in a Txn that compares the key's create revision
 * (the revision of our own claim: a key deleted and created again has
 * another) and its lease with ours, and raises the mark in the same Txn
 * (G3, G4):
 *
 *   Txn If(CreateRevision(key) == ours, Lease(key) == ours
 *          [, Value(mark) < raise])
 *       Then([Put(mark, raise),] Range(mark)) Else(Range(key), Range(mark))
 *
 * Marks are 20-digit decimals, so etcd's byte comparison is numeric; one
 * that is not (an operator's "1000") fails the compare unraised, so a raise
 * counts only on the mark the Txn reads back (prove()).  Every value read
 * is parsed strictly (store_parse.c).  The lease's clock starts on the
 * leader when it handles the request, after we sent it, so the agent's
 * rule holds: valid from before the grant or keep-alive was sent, for
 * ttl - margin.  A leader change never shortens a lease (the new leader
 * gives every lease a full TTL).
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

const struct store_ops ag_etcd_ops = { .name = "etcd", .init = e_init };
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

/* A pair's mark as read: AG_VAL_*, the value, the revision that last wrote it, its text. */
struct mread {
	int v;
	uint64_t mark, mod_rev;
	char text[64];
};

struct estore {
	CURL *h;			/* the one request's handle */
	CURLM *m;			/* ... driven by post() through ag_wait() */
	char **eps;			/* endpoints */
	int n_eps, cur;			/* cur: the endpoint the next request goes to */
	char lease[24];			/* decimal lease id, "" none */
	uint64_t create_rev;		/* the revision that created our key, 0 none */
	int64_t lease_sent;		/* before its grant or last keep-alive */
	struct mread seen;		/* our pair's mark as the last claim or proof read it */
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

/* The Txn reply's "succeeded" (strictly a boolean; left out: false). */
static bool txn_ok(struct json_object *j)
{
	bool ok;

	return ag_etcd_succeeded(j, &ok) != AG_VAL_INVALID && ok;
}

#define txn_range	ag_etcd_txn_range
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

/* LeaseKeepAlive of our lease: 1 alive (lease_sent updated), 0 gone, -1 failed. */
static int keepalive(struct agent *a, int64_t deadline, int64_t *sent)
{
	struct estore *e = E(a);
	struct json_object *j, *res;
	char body[64];
	uint64_t ttl;
	int code, ret;

	snprintf(body, sizeof(body), "{\"ID\":\"%s\"}", e->lease);
	*sent = boot_ns();
	j = call(a, deadline, "/v3/lease/keepalive", body, &code);
	if (!j)
		return code == 5 ? 0 : -1;	/* 5: not found */
	/* TTL left out (0): the lease is gone; not a string of digits: a bad reply. */
	res = json_object_object_get_ex(j, "result", &res) ? res : NULL;
	switch (ag_etcd_u64(res, "TTL", ID_MAX, &ttl)) {
	case AG_VAL_OK:
		ret = ttl > 0;
		break;
	case AG_VAL_MISSING:
		ret = res ? 0 : -1;
		break;
	default:
		ret = -1;
		break;
	}
	if (ret < 0)
		logm(AG_WARN, "etcd keep-alive of lease %s: a bad reply (no TTL as a decimal string): %.200s",
		     e->lease, json_object_to_json_string(j));
	json_object_put(j);
	if (ret > 0)
		e->lease_sent = *sent;
	else if (!ret)
		e->lease[0] = '\0';
	return ret;
}

/*
 * A lease young enough to claim with: ours, kept alive, or a new one.
 * false: not now (no answer, or a bad one); the claim fails and the
 * engine asks again.
 */
static bool have_lease(struct agent *a)
{
	struct estore *e = E(a);
	struct json_object *j;
	char body[64];
	uint64_t id;
	int64_t sent;
	int code, alive;

	if (e->lease[0] && boot_ns() - e->lease_sent < (int64_t)a->c->renew_ms * NS_PER_MS)
		return true;
	if (e->lease[0]) {
		alive = keepalive(a, 0, &sent);
		if (alive)
			return alive > 0;
	}
	snprintf(body, sizeof(body), "{\"TTL\":\"%u\"}", (a->c->ttl_ms + 999) / 1000);
	sent = boot_ns();
	j = call(a, 0, "/v3/lease/grant", body, &code);
	if (!j)
		return false;
	if (ag_etcd_u64(j, "ID", ID_MAX, &id) == AG_VAL_OK && id) {
		snprintf(e->lease, sizeof(e->lease), "%llu", (unsigned long long)id);
		e->lease_sent = sent;
	} else {
		/* Nobody keeps an unknown lease alive: it ends by itself. */
		logm(AG_WARN, "etcd lease grant: a bad reply (no ID as a decimal string): %.200s",
		     json_object_to_json_string(j));
	}
	json_object_put(j);
	return e->lease[0];
}

/* @kv (NULL: none) as a struct mread; -1 when its revision is not a decimal string. */
static int mread_of(struct agent *a, struct json_object *kv, struct mread *mr)
{
	mr->v = ag_etcd_kv_mark(kv, a->mark_max_ms, &mr->mark, mr->text, sizeof(mr->text));
	mr->mod_rev = 0;
	if (mr->v != AG_VAL_MISSING &&
	    (ag_etcd_u64(kv, "mod_revision", ID_MAX, &mr->mod_rev) != AG_VAL_OK || !mr->mod_rev)) {
		ag_reply_invalid(a, "etcd mod_revision", json_object_to_json_string(kv),
				 strlen(json_object_to_json_string(kv)));
		return -1;
	}
	return 0;
}

/*
 * The compare "the mark is still as read" for a Txn: absent (create
 * revision 0), or last written by the very revision read.  So a write
 * that replaces an invalid mark replaces only the text found invalid.
 */
static void mark_cmp(const struct mread *mr, const char *m64, char *buf, size_t len)
{
	if (mr->v == AG_VAL_MISSING)
		snprintf(buf, len, "{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"CREATE\",\"create_revision\":\"0\"}",
			 m64);
	else
		snprintf(buf, len, "{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"MOD\",\"mod_revision\":\"%llu\"}",
			 m64, (unsigned long long)mr->mod_rev);
}

/* What read_pair() found at a pair's key. */
enum { KEY_ABSENT, KEY_OTHERS, KEY_OURS, KEY_OURS_STRAY };

/* etcd's permission denied (RBAC: the user's roles leave this key out). */
#define PERMISSION_DENIED	7

/* A pair's key refused by RBAC: said, and the claim is this pair's refusal (TRY_REFUSED). */
static int pair_refused(struct agent *a, const char *key)
{
	logm(AG_WARN, "event=etcd_permission_denied key=%s user=%s: etcd's RBAC does not grant this pair's key (permission denied): this pair is skipped",
	     key, a->c->etcd_user ? a->c->etcd_user : "");
	return TRY_REFUSED;
}

/*
 * Read pair (@dc, @w) in one Txn (one revision): its mark into *@mr and
 * its key into *@state: KEY_ABSENT, KEY_OTHERS, KEY_OURS (this run's
 * owner, bound to the lease it keeps alive: a claim of ours that
 * committed after the engine had given it back, its reply lost; *@crev
 * its create revision) or KEY_OURS_STRAY (this run's owner on another
 * lease).  0, -1 (no reply, or a bad one), or TRY_REFUSED (permission
 * denied: etcd's RBAC leaves this pair's keys out).
 */
static int read_pair(struct agent *a, uint32_t dc, uint32_t w, struct mread *mr, int *state,
		     uint64_t *crev)
{
	struct estore *e = E(a);
	struct json_object *j, *range, *kv;
	char key[512], k64[700], mkey[512], m64[700], v64[440], *body;
	const char *val;
	uint64_t lease = 0, ours = 0;
	int code, ret = 0, lv;

	key_of(a, dc, w, key, sizeof(key));
	b64(key, k64, sizeof(k64));
	mark_key_of(a, dc, w, mkey, sizeof(mkey));
	b64(mkey, m64, sizeof(m64));
	b64(a->owner, v64, sizeof(v64));
	if (asprintf(&body,
		     "{\"success\":[{\"request_range\":{\"key\":\"%s\"}},{\"request_range\":{\"key\":\"%s\"}}]}",
		     m64, k64) < 0)
		return -1;
	j = call(a, 0, "/v3/kv/txn", body, &code);
	free(body);
	if (!j)
		return code == PERMISSION_DENIED ? pair_refused(a, key) : -1;
	if (!txn_ok(j) || !txn_range(j, 0) || mread_of(a, range_kv(txn_range(j, 0)), mr))
		ret = -1;
	range = txn_range(j, 1);
	kv = range ? range_kv(range) : NULL;
	*state = KEY_ABSENT;
	*crev = 0;
	if (!ret && !range) {
		ret = -1;
	} else if (!ret && kv) {
		/* Our owner's text exactly as we wrote it (base64), on our lease or not. */
		val = jstr(kv, "value");
		lv = ag_etcd_u64(kv, "lease", ID_MAX, &lease);
		if (ag_etcd_u64(kv, "create_revision", ID_MAX, crev) != AG_VAL_OK || !*crev ||
		    lv == AG_VAL_INVALID)
			ret = -1;
		else if (!val || strcmp(val, v64) != 0)
			*state = KEY_OTHERS;
		else if (e->lease[0] && !ag_parse_u64(e->lease, strlen(e->lease), ID_MAX, &ours) &&
			 lv == AG_VAL_OK && lease == ours)
			*state = KEY_OURS;
		else
			*state = KEY_OURS_STRAY;
	}
	if (ret)
		ag_reply_invalid(a, "etcd range of a pair", json_object_to_json_string(j),
				 strlen(json_object_to_json_string(j)));
	json_object_put(j);
	return ret;
}

/*
 * A Txn whose reply is wanted only for its "succeeded" (a conditional
 * write: --init-store's replacement, give_back()'s delete), @body freed:
 * 1 it succeeded, 0 its compare failed (nothing written), -1 no reply or
 * one without a boolean "succeeded" (the caller asks again).
 */
static int txn_succeeded(struct agent *a, char *body)
{
	struct json_object *j;
	int code, ret;
	bool ok;

	j = call(a, 0, "/v3/kv/txn", body, &code);
	free(body);
	if (!j)
		return -1;
	ret = ag_etcd_succeeded(j, &ok) == AG_VAL_INVALID ? -1 : ok;
	json_object_put(j);
	return ret;
}

/*
 * --init-store: create the mark of (@dc, @w) at @value where it is
 * missing, in one Txn that reads it where it is not:
 *
 *   Txn If(CreateRevision(mark) == 0) Then(Put(mark, value)) Else(Range(mark))
 *
 * and where that read finds it invalid and @replace_invalid, replace only
 * that very text (ModRevision(mark) == as read).  INIT_*, or -1 failed: no
 * answer, or the mark changed between the two (the engine asks again).
 */
static int e_init_mark(struct agent *a, uint32_t dc, uint32_t w, uint64_t value,
		       bool replace_invalid)
{
	struct json_object *j;
	char mkey[512], m64[700], v[24], v64[40], cmp[900], *body;
	struct mread mr = { .v = AG_VAL_MISSING };
	int code;
	bool ok;

	mark_key_of(a, dc, w, mkey, sizeof(mkey));
	b64(mkey, m64, sizeof(m64));
	snprintf(v, sizeof(v), MARK_FMT, (unsigned long long)value);
	b64(v, v64, sizeof(v64));
	mark_cmp(&mr, m64, cmp, sizeof(cmp));
	if (asprintf(&body, "{\"compare\":[%s],\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}],"
		     "\"failure\":[{\"request_range\":{\"key\":\"%s\"}}]}", cmp, m64, v64, m64) < 0)
		return -1;
	j = call(a, 0, "/v3/kv/txn", body, &code);
	free(body);
	if (!j)
		return -1;
	if (ag_etcd_succeeded(j, &ok) == AG_VAL_INVALID ||
	    (!ok && (mread_of(a, range_kv(txn_range(j, 0)), &mr) || mr.v == AG_VAL_MISSING))) {
		ag_reply_invalid(a, "etcd mark at --init-store", json_object_to_json_string(j),
				 strlen(json_object_to_json_string(j)));
		json_object_put(j);
		return -1;
	}
	json_object_put(j);
	if (ok)
		return INIT_CREATED;
	if (mr.v == AG_VAL_OK)
		return INIT_PRESENT;
	if (!replace_invalid) {
		ag_mark_invalid(a, dc, w, mr.text, strlen(mr.text), "left");
		return INIT_INVALID;
	}
	mark_cmp(&mr, m64, cmp, sizeof(cmp));
	if (asprintf(&body, "{\"compare\":[%s],\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}]}",
		     cmp, m64, v64) < 0)
		return -1;
	switch (txn_succeeded(a, body)) {
	case 1:
		break;
	case 0:
		logm(AG_DEBUG, "etcd --init-store: mark %s changed since it was read: not replaced", mkey);
		return -1;
	default:
		return -1;
	}
	ag_mark_invalid(a, dc, w, mr.text, strlen(mr.text), "replaced");
	return INIT_REPLACED;
}

/*
 * Claim (@dc, @w): read the pair (its mark, whether its key exists), then
 * one Txn that creates the key bound to our lease only while the key is
 * absent and the mark is still as read, and reads the mark back:
 *
 *   Txn If(CreateRevision(key) == 0, <the mark as read>)
 *       Then([Put(mark, init_mark),] Put(key, owner, lease), Range(mark))
 *       Else(Range(key, count))
 *
 * A missing or invalid mark is written (at @init_mark) only with
 * @init_mark, in the same Txn, and only over the very text read; without,
 * nothing is written (TRY_NO_MARK, TRY_BAD_MARK).  Nothing is asked twice:
 * a failed compare is not committed (the key taken since the read:
 * TRY_HELD; the mark changed: TRY_ERROR, the engine asks again), a Txn
 * without a readable answer TRY_UNKNOWN (the engine gives the key back).
 *
 * The lease may be one an earlier claim of this run bound a key to
 * (have_lease() keeps it alive).  No such key is left to be kept alive
 * for ever and read as another owner's (pool_full for ever with one
 * pair): the engine claims only once every earlier claim is settled, an
 * unknown one given back (resolve_unknown(): delete-if-owner), the one it
 * claimed last, served or not, offered back first (acquire(): readopt()
 * takes it again while its key is the one that claim bound to our lease;
 * a claim goes on only when that key is not ours: gone with its lease,
 * deleted, or another's).  A VM fork starts the store afresh.  A claim of
 * ours delayed on its way past its give-back may still commit later, on
 * the lease kept alive here: the read finds our owner at the key, never
 * counted as another's (issue 40 D3): on our lease, taken as this claim
 * (event=own_key_adopted); on another, TRY_UNKNOWN (the engine gives it
 * back).  A key etcd's RBAC does not grant (permission denied) is this
 * pair's refusal, TRY_REFUSED (event=etcd_permission_denied).
 */
static int e_claim(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent, uint64_t *mark,
		   uint64_t init_mark)
{
	struct estore *e = E(a);
	struct json_object *j, *hdr = NULL;
	char key[512], k64[700], mkey[512], m64[700], v64[440], iv[24], iv64[40], cmp[900];
	char put_mark[1000], text[64], *body;
	uint64_t rev, count;
	struct mread mr, back;
	int code, ret, state;
	bool ok;

	e->create_rev = 0;
	if (!have_lease(a))
		return TRY_ERROR;
	key_of(a, dc, w, key, sizeof(key));
	b64(key, k64, sizeof(k64));
	mark_key_of(a, dc, w, mkey, sizeof(mkey));
	b64(mkey, m64, sizeof(m64));
	b64(a->owner, v64, sizeof(v64));
	ret = read_pair(a, dc, w, &mr, &state, &rev);
	if (ret)
		return ret == TRY_REFUSED ? TRY_REFUSED : TRY_ERROR;
	if (state == KEY_OURS && mr.v == AG_VAL_OK) {
		/*
		 * Our own key on the lease we keep alive, which the engine does
		 * not hold (issue 40 D3: a claim of ours, its reply lost, that
		 * committed after its give-back): taken as this claim.  The key
		 * and the mark were read in one revision, and nobody else can
		 * have raised the mark while the key was ours.
		 */
		logm(AG_WARN, "event=own_key_adopted datacenter=%u worker=%u key=%s lease=%s: a claim of this run whose reply was lost committed after it was given back; taken as this claim",
		     dc, w, key, e->lease);
		e->create_rev = rev;
		e->seen = mr;
		*mark = mr.mark;
		*sent = e->lease_sent;
		return TRY_TAKEN;
	}
	if (state == KEY_OURS || state == KEY_OURS_STRAY) {
		/* Ours, but not to be taken as it is: the engine gives it back (delete-if-owner). */
		logm(AG_WARN, "event=own_key_found datacenter=%u worker=%u key=%s: this run's owner on a key the agent does not hold; given back",
		     dc, w, key);
		return TRY_UNKNOWN;
	}
	if (state == KEY_OTHERS)
		return TRY_HELD;
	if (mr.v == AG_VAL_MISSING && !init_mark)
		return TRY_NO_MARK;
	if (mr.v == AG_VAL_INVALID && !init_mark) {
		ag_mark_invalid(a, dc, w, mr.text, strlen(mr.text), "not-served");
		return TRY_BAD_MARK;
	}
	put_mark[0] = '\0';
	if (mr.v != AG_VAL_OK) {
		snprintf(iv, sizeof(iv), MARK_FMT, (unsigned long long)init_mark);
		b64(iv, iv64, sizeof(iv64));
		snprintf(put_mark, sizeof(put_mark),
			 "{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}},", m64, iv64);
	}
	mark_cmp(&mr, m64, cmp, sizeof(cmp));
	if (asprintf(&body,
		     "{\"compare\":[{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"CREATE\",\"create_revision\":\"0\"},%s],"
		     "\"success\":[%s{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%s\"}},"
		     "{\"request_range\":{\"key\":\"%s\"}}],"
		     "\"failure\":[{\"request_range\":{\"key\":\"%s\",\"count_only\":true}}]}",
		     k64, cmp, put_mark, k64, v64, e->lease, m64, k64) < 0)
		return TRY_ERROR;
	*sent = e->lease_sent;
	j = call(a, 0, "/v3/kv/txn", body, &code);
	free(body);
	if (!j) {
		if (code == 5)	/* the lease expired meanwhile: nothing was written */
			e->lease[0] = '\0';
		if (code == PERMISSION_DENIED && !a->fatal)
			return pair_refused(a, key);
		/* Never sent, or an error etcd answered (not 14, unavailable; not 4, deadline): not written. */
		if (code == 5 || code == NOT_SENT || a->fatal ||
		    (code >= 0 && code != 14 && code != 4))
			return TRY_ERROR;
		return TRY_UNKNOWN;	/* no reply: maybe committed (G6, the engine) */
	}
	if (ag_etcd_succeeded(j, &ok) == AG_VAL_INVALID) {
		ag_reply_invalid(a, "etcd claim's \"succeeded\"", json_object_to_json_string(j),
				 strlen(json_object_to_json_string(j)));
		json_object_put(j);
		return TRY_UNKNOWN;
	}
	if (!ok) {
		/* Not committed: the key taken (TRY_HELD), or the mark changed (count left out), since the read. */
		ret = ag_etcd_u64(txn_range(j, 0), "count", ID_MAX, &count);
		if (ret == AG_VAL_INVALID)
			ag_reply_invalid(a, "etcd claim's count", json_object_to_json_string(j),
					 strlen(json_object_to_json_string(j)));
		json_object_put(j);
		return ret == AG_VAL_OK && count ? TRY_HELD : TRY_ERROR;
	}
	/* Our Put is the Txn's only write to the key: its create revision is the Txn's. */
	json_object_object_get_ex(j, "header", &hdr);
	/* Committed, but a reply this agent cannot use: given back by the engine. */
	ret = TRY_UNKNOWN;
	if (mread_of(a, range_kv(txn_range(j, put_mark[0] ? 2 : 1)), &back) ||
	    back.v != AG_VAL_OK) {
		snprintf(text, sizeof(text), "%s", back.text);
		ag_reply_invalid(a, "etcd mark read back at a claim", text, strlen(text));
	} else if (ag_etcd_u64(hdr, "revision", ID_MAX, &rev) != AG_VAL_OK || !rev) {
		ag_reply_invalid(a, "etcd claim's revision", json_object_to_json_string(j),
				 strlen(json_object_to_json_string(j)));
	} else {
		if (mr.v == AG_VAL_INVALID)
			ag_mark_invalid(a, dc, w, mr.text, strlen(mr.text), "replaced");
		e->create_rev = rev;
		e->seen = back;
		*mark = back.mark;
		ret = TRY_TAKEN;
	}
	json_object_put(j);
	return ret;
}

/*
 * Prove that our key is the one our claim created and still bound to our
 * lease, raising the mark to @raise (0: no raise) in the same Txn (see
 * the top of this file).  1 ours, *@mark the mark as the Txn read it (0
 * when it is missing or invalid); 0 not ours (gone, or another's); -1
 * failed.
 *
 * The raise compares the mark as this holder last read it (e->seen, at
 * its claim or last proof): a valid one by value (Value(mark) < raise), a
 * missing or invalid one as that very read (absent, or its mod revision:
 * only the text found invalid is replaced; safe, this holder's floor is
 * above every earlier holder's timestamps and @raise above its own).  The
 * key proven ours but the mark compare failed (at or above @raise
 * already; missing, invalid or changed since that read): 1 with the mark
 * read now, nothing sent again; the engine raises again where that is
 * below what it needs (agent.c renew(): event=mark_lowered), and that
 * proof compares the very mark read here.  A raise counts only on a valid
 * mark read back at or above it ("1000" fails the byte compare unraised).
 */
static int prove(struct agent *a, int64_t deadline, uint64_t raise, uint64_t *mark)
{
	struct estore *e = E(a);
	struct json_object *j, *kv;
	char k64[700], mkey[512], m64[700], v[24], v64[40], *body;
	char cmp_raise[900] = "", put_raise[900] = "";
	uint64_t rev, lease, lease_ours = 0;
	struct mread was = e->seen, back;
	int code;
	bool ok;

	b64(a->key, k64, sizeof(k64));
	mark_key_of(a, a->dc, a->w, mkey, sizeof(mkey));
	b64(mkey, m64, sizeof(m64));
	*mark = 0;
	if (ag_parse_u64(e->lease, strlen(e->lease), ID_MAX, &lease_ours) || !e->create_rev)
		return 0;
	if (raise) {
		snprintf(v, sizeof(v), MARK_FMT, (unsigned long long)raise);
		b64(v, v64, sizeof(v64));
		if (was.v == AG_VAL_OK) {
			snprintf(cmp_raise, sizeof(cmp_raise),
				 ",{\"key\":\"%s\",\"result\":\"LESS\",\"target\":\"VALUE\",\"value\":\"%s\"}",
				 m64, v64);
		} else {
			cmp_raise[0] = ',';
			mark_cmp(&was, m64, cmp_raise + 1, sizeof(cmp_raise) - 1);
		}
		snprintf(put_raise, sizeof(put_raise),
			 "{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}},", m64, v64);
	}
	if (asprintf(&body,
		     "{\"compare\":[{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"CREATE\",\"create_revision\":\"%llu\"},"
		     "{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"LEASE\",\"lease\":\"%s\"}%s],"
		     "\"success\":[%s{\"request_range\":{\"key\":\"%s\"}}],"
		     "\"failure\":[{\"request_range\":{\"key\":\"%s\"}},{\"request_range\":{\"key\":\"%s\"}}]}",
		     k64, (unsigned long long)e->create_rev, k64, e->lease, cmp_raise, put_raise,
		     m64, k64, m64) < 0)
		return -1;
	j = call(a, deadline, "/v3/kv/txn", body, &code);
	free(body);
	if (!j)
		return -1;
	if (ag_etcd_succeeded(j, &ok) == AG_VAL_INVALID) {
		json_object_put(j);
		return -1;
	}
	if (!ok) {
		/* Which compare failed?  The key first. */
		kv = range_kv(txn_range(j, 0));
		if (!kv || ag_etcd_u64(kv, "create_revision", ID_MAX, &rev) != AG_VAL_OK ||
		    rev != e->create_rev || ag_etcd_u64(kv, "lease", ID_MAX, &lease) != AG_VAL_OK ||
		    lease != lease_ours) {
			logm(AG_WARN, "event=key_lost key=%s: %s", a->key,
			     kv ? "the key is another lease's now" : "the key is gone (deleted, or expired)");
			json_object_put(j);
			return 0;
		}
		if (!raise) {
			/* Only the key was compared, and it reads as ours. */
			ag_reply_invalid(a, "etcd proof of a key", json_object_to_json_string(j),
					 strlen(json_object_to_json_string(j)));
			json_object_put(j);
			return -1;
		}
	}
	/* The mark: after the raise's Put, or after the key in the Else branch. */
	if (mread_of(a, range_kv(txn_range(j, !ok || raise ? 1 : 0)), &back)) {
		json_object_put(j);
		return -1;
	}
	json_object_put(j);
	e->seen = back;
	*mark = back.v == AG_VAL_OK ? back.mark : 0;
	if (!ok || !raise)
		return 1;
	if (back.v != AG_VAL_OK || back.mark < raise) {
		ag_reply_invalid(a, "etcd mark read back after a raise", back.text, strlen(back.text));
		*mark = 0;
		return -1;
	}
	if (was.v == AG_VAL_INVALID)
		ag_mark_invalid(a, a->dc, a->w, was.text, strlen(was.text), "replaced");
	else if (was.v == AG_VAL_MISSING)
		logm(AG_WARN, "event=mark_recreated key=%s mark_ms=%llu: the pair's mark was gone while this host held the pair",
		     mkey, (unsigned long long)raise);
	return 1;
}

/* Our lease still alive, and the key still the one our claim bound to it: ours again. */
static int e_readopt(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent, uint64_t *mark)
{
	struct estore *e = E(a);
	int ret;

	if (!e->lease[0] || !e->create_rev || dc != a->dc || w != a->w)
		return TRY_HELD;
	ret = keepalive(a, 0, sent);
	if (ret <= 0)
		return ret < 0 ? TRY_ERROR : TRY_HELD;
	ret = prove(a, 0, a->mark_ms, mark);
	if (ret < 0)
		return TRY_ERROR;
	return ret ? TRY_TAKEN : TRY_HELD;
}

static int e_renew(struct agent *a, int64_t deadline, int64_t *sent, uint64_t raise_to,
		   uint64_t *mark)
{
	int ret;

	*mark = AG_MARK_UNREAD;
	if (!E(a)->lease[0])
		return 0;
	ret = keepalive(a, deadline, sent);
	if (ret <= 0)
		return ret;
	/* The lease lives; is the key still the one our claim made? */
	ret = prove(a, deadline, raise_to, mark);
	if (ret != 1)
		*mark = AG_MARK_UNREAD;
	return ret;
}

/*
 * give_back(): delete pair (@dc, @w)'s key only while it holds our owner
 * (G6, agent.c), in one Txn.  1 deleted, 0 not ours, -1 no answer (the
 * engine asks again, or leaves the key to end with its lease).
 */
static int e_give_back(struct agent *a, uint32_t dc, uint32_t w)
{
	char key[512], k64[700], v64[440], *body;

	key_of(a, dc, w, key, sizeof(key));
	b64(key, k64, sizeof(k64));
	b64(a->owner, v64, sizeof(v64));
	if (asprintf(&body,
		     "{\"compare\":[{\"key\":\"%s\",\"result\":\"EQUAL\",\"target\":\"VALUE\",\"value\":\"%s\"}],"
		     "\"success\":[{\"request_delete_range\":{\"key\":\"%s\"}}]}",
		     k64, v64, k64) < 0)
		return -1;
	return txn_succeeded(a, body);
}

const struct store_ops ag_etcd_ops = {
	.name = "etcd",
	.init = e_init,
	.fini = e_fini,
	.describe = e_describe,
	.claim_wait = e_claim_wait,
	.claim = e_claim,
	.readopt = e_readopt,
	.renew = e_renew,
	.give_back = e_give_back,
	.init_mark = e_init_mark,
};

/*
 * The record design (issue 40, docs/lease-record.md): ag_etcd_rec_ops,
 * the backend of record.c's engine, on this file's connection (post(),
 * call(): one request to one endpoint, once; the token) and its strict
 * parsers (store_parse.c).
 *
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
 * owner: never "sf2 ") is read as RS_OK with its text: the engine's parse
 * fails on it (ag_rec_parse()), event=mark_invalid, never served.  A key
 * bound to a lease whose value does begin "sf2 " (no agent writes one) is
 * read with "etcd-lease=ID " before its text, so that it too is never
 * taken as a record.  A key bound to a lease has a mod_revision like any
 * other, and the engine does compare-and-set over a record it could not
 * parse (a quarantine that has passed, --init-store --init-mark-ms: it
 * replaces the invalid text): the compare Lease(key) == 0 makes that cas
 * RS_MOVED, so no cas ever replaces 1.4.0's key; its pair is taken only
 * once its lease ended and the key is gone (a missing mark then,
 * quarantined as today).  A plain key at that name whose value is not a
 * record (an operator's) is invalid, replaced only as the engine says.
 * Reading 1.4.0's key as held by a 1.4.0 agent, and taking its mark key's
 * value over, is step 3 (the rolling upgrade), not done here.
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

static int er_read(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline, struct ag_rec *out)
{
	struct json_object *j, *kvs = NULL, *kv, *v;
	char key[512], k64[700], body[800];
	uint64_t count = 0, rev = 0, lease = 0;
	int code, cv, lv;
	long n;
	size_t nkv;

	key_of(a, dc, w, key, sizeof(key));
	b64(key, k64, sizeof(k64));
	snprintf(body, sizeof(body), "{\"key\":\"%s\"}", k64);
	j = call(a, deadline, "/v3/kv/range", body, &code);
	if (!j)
		return rec_error(a, key, code, false);
	/* count and kvs agree: both left out (no key), or 1 and one key-value. */
	cv = ag_etcd_u64(j, "count", ID_MAX, &count);
	nkv = json_object_object_get_ex(j, "kvs", &kvs) && json_object_is_type(kvs, json_type_array) ?
	      json_object_array_length(kvs) : 0;
	if (cv == AG_VAL_INVALID || count > 1 || count != nkv ||
	    (kvs && !json_object_is_type(kvs, json_type_array)))
		goto bad;
	if (!count) {
		json_object_put(j);
		return RS_ABSENT;
	}
	kv = range_kv(j);
	lv = ag_etcd_u64(kv, "lease", ID_MAX, &lease);
	if (!kv || ag_etcd_u64(kv, "mod_revision", ID_MAX, &rev) != AG_VAL_OK || !rev ||
	    lv == AG_VAL_INVALID)
		goto bad;
	/* A key with an empty value: the gateway leaves "value" out. */
	n = 0;
	out->text[0] = '\0';
	if (json_object_object_get_ex(kv, "value", &v) && v) {
		if (!json_object_is_type(v, json_type_string))
			goto bad;
		n = ag_unb64(json_object_get_string(v), (size_t)json_object_get_string_len(v),
			     out->text, sizeof(out->text));
		if (n < 0) {
			ag_reply_invalid(a, "etcd record value (not base64, or longer than a record)",
					 json_object_get_string(v),
					 (size_t)json_object_get_string_len(v));
			json_object_put(j);
			return RS_FAILED;
		}
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
bad:
	ag_reply_invalid(a, "etcd range of a record", json_object_to_json_string(j),
			 strlen(json_object_to_json_string(j)));
	json_object_put(j);
	return RS_FAILED;
}

static int er_cas(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, const char *text,
		  size_t len, int64_t deadline, uint64_t *version)
{
	struct json_object *j, *hdr = NULL;
	char key[512], k64[700], txt[AG_REC_MAX], v64[AG_REC_MAX / 3 * 4 + 8], cmp[1600], *body;
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
	if (!expect)
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

const struct rec_ops ag_etcd_rec_ops = {
	.name = "etcd",
	.init = e_init,
	.fini = e_fini,
	.describe = e_describe,
	.claim_wait = e_claim_wait,
	.read = er_read,
	.cas = er_cas,
};
#endif /* AG_NO_ETCD */
