/*
 * admin.c - the run's view of the cluster: connections, Metadata, the
 * controller and its retries, error lines (see admin.h).
 */
#include "tools/admin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/err.h"
#include "tools/api.h"
#include "tools/parse.h"

void adm_init(adm_ctx *ctx, const char *cmd, const char *bootstrap, int timeout_ms)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->cmd = cmd;
	ctx->bootstrap = bootstrap;
	ctx->timeout_ms = timeout_ms;
	proto_arena_init(&ctx->arena, 0);
}

void adm_fini(adm_ctx *ctx)
{
	adm_ctx_conn *n;
	for (adm_ctx_conn *k = ctx->conns; k; k = n) {
		n = k->next;
		adm_conn_close(&k->c);
		free(k);
	}
	ctx->conns = NULL;
	ctx->any = NULL;
	proto_arena_free(&ctx->arena);
}

void adm_error(adm_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "samsa-admin: %s: ", ctx->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	ctx->failed = true;
}

int adm_status(const adm_ctx *ctx)
{
	return ctx->failed ? 1 : 0;
}

int adm_usage(adm_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "samsa-admin: %s: ", ctx->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'samsa-admin %s --help')\n", ctx->cmd);
	ctx->failed = true;
	return 2;
}

void *adm_alloc(adm_ctx *ctx, size_t n)
{
	void *p = proto_arena_alloc(&ctx->arena, n ? n : 1);
	if (!p) {
		fprintf(stderr, "samsa-admin: %s: out of memory\n", ctx->cmd);
		exit(1);
	}
	return p;
}

char *adm_strdup(adm_ctx *ctx, proto_str s)
{
	size_t n = s.len > 0 ? (size_t)s.len : 0;
	char *p = adm_alloc(ctx, n + 1);
	if (n)
		memcpy(p, s.ptr, n);
	p[n] = '\0';
	return p;
}

const char *adm_errstr(adm_ctx *ctx, int16_t code, proto_str message)
{
	const char *name = proto_err_name(code);
	if (message.len <= 0)
		return name;
	size_t n = strlen(name) + 2 + (size_t)message.len + 1;
	char *s = adm_alloc(ctx, n);
	snprintf(s, n, "%s: %.*s", name, (int)message.len, message.ptr);
	return s;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* A new connection slot (not yet open). */
static adm_conn *new_conn(adm_ctx *ctx)
{
	adm_ctx_conn *k = calloc(1, sizeof(*k));
	if (!k) {
		fprintf(stderr, "samsa-admin: %s: out of memory\n", ctx->cmd);
		exit(1);
	}
	k->c.fd = -1;
	k->next = ctx->conns;
	ctx->conns = k;
	return &k->c;
}

/* An open connection to host:port, or NULL. */
static adm_conn *find_open(adm_ctx *ctx, const char *host, int port)
{
	for (adm_ctx_conn *k = ctx->conns; k; k = k->next)
		if (k->c.fd >= 0 && k->c.port == port && strcmp(k->c.host, host) == 0)
			return &k->c;
	return NULL;
}

/*
 * The first bootstrap address from index *next on that answers; *next
 * moves past it. why collects the failures ("; "-separated). NULL when
 * none is left.
 */
static adm_conn *next_bootstrap(adm_ctx *ctx, int *next, char *why, size_t cap)
{
	for (;; (*next)++) {
		char host[256];
		int port;
		int rc = adm_parse_host_port(ctx->bootstrap, *next, host, sizeof(host), &port);
		if (rc == 0)
			return NULL;
		if (rc < 0) {
			size_t at = strlen(why);
			snprintf(why + at, cap - at, "%sentry %d of '%s' is not host:port",
				 at ? "; " : "", *next + 1, ctx->bootstrap);
			continue;
		}
		adm_conn *c = find_open(ctx, host, port);
		if (c) {
			(*next)++;
			return c;
		}
		c = new_conn(ctx);
		if (adm_conn_open(c, host, port, -1, ctx->timeout_ms, ctx->sec) == 0) {
			(*next)++;
			return c;
		}
		size_t at = strlen(why);
		snprintf(why + at, cap - at, "%s%s", at ? "; " : "", c->err);
	}
}

adm_conn *adm_any(adm_ctx *ctx)
{
	if (ctx->any && ctx->any->fd >= 0)
		return ctx->any;
	char why[2048] = "";
	int next = 0;
	ctx->any = next_bootstrap(ctx, &next, why, sizeof(why));
	if (!ctx->any)
		adm_error(ctx, "no bootstrap broker answers (%s)", why[0] ? why : "no address given");
	return ctx->any;
}

static adm_conn *broker_conn(adm_ctx *ctx, int32_t id, char *why, size_t cap);

int adm_any_call(adm_ctx *ctx, const adm_api *api, const void *request, void *response,
		 int16_t *version)
{
	char why[2048] = "";
	if (ctx->any && ctx->any->fd >= 0) {
		if (adm_conn_call(ctx->any, api, request, &ctx->arena, response, version) == 0)
			return 0;
		snprintf(why, sizeof(why), "%s", ctx->any->err);
		if (ctx->any->fd >= 0) { /* nothing sent: no version in common */
			adm_error(ctx, "%s", why);
			return -1;
		}
	}
	int next = 0;
	for (;;) {
		adm_conn *c = next_bootstrap(ctx, &next, why, sizeof(why));
		if (!c)
			break;
		ctx->any = c;
		if (adm_conn_call(c, api, request, &ctx->arena, response, version) == 0)
			return 0;
		size_t at = strlen(why);
		snprintf(why + at, sizeof(why) - at, "%s%s", at ? "; " : "", c->err);
		if (c->fd >= 0)
			break;
	}
	/* then the brokers the last Metadata named */
	for (int32_t i = 0; ctx->have_md && i < ctx->md.brokers_count; i++) {
		char one[1024];
		adm_conn *c = broker_conn(ctx, ctx->md.brokers[i].node_id, one, sizeof(one));
		if (c) {
			ctx->any = c;
			if (adm_conn_call(c, api, request, &ctx->arena, response, version) == 0)
				return 0;
			snprintf(one, sizeof(one), "%s", c->err);
		}
		size_t at = strlen(why);
		snprintf(why + at, sizeof(why) - at, "%s%s", at ? "; " : "", one);
	}
	ctx->any = NULL;
	adm_error(ctx, "%s failed on every broker (%s)", api->name, why);
	return -1;
}

int adm_metadata(adm_ctx *ctx, const proto_str *topics, int n, MetadataResponse *out,
		 int16_t *version)
{
	MetadataRequest req;
	MetadataRequest_init(&req);
	req.allow_auto_topic_creation = false;
	if (topics && n == 0) {
		/* v1+: an empty list asks for no topic (v0 would read it as all) */
		req.topics_count = 0;
	} else if (topics) {
		req.topics_count = n;
		req.topics = adm_alloc(ctx, sizeof(*req.topics) * (size_t)(n ? n : 1));
		for (int i = 0; i < n; i++)
			req.topics[i].name = topics[i];
	} else {
		req.topics_count = -1; /* v1+: all topics */
		adm_conn *c = adm_any(ctx);
		if (!c)
			return -1;
		if (adm_conn_version(c, adm_api_metadata.key) == 0)
			req.topics_count = 0; /* v0: empty is all */
	}
	if (adm_any_call(ctx, &adm_api_metadata, &req, out, version) < 0)
		return -1;
	if (out->error_code != 0) {
		adm_error(ctx, "Metadata: %s", proto_err_name(out->error_code));
		return -1;
	}
	ctx->md = *out;
	ctx->have_md = true;
	return 0;
}

const MetadataResponse_MetadataResponseBroker *adm_md_broker(const adm_ctx *ctx, int32_t id)
{
	if (!ctx->have_md)
		return NULL;
	for (int32_t i = 0; i < ctx->md.brokers_count; i++)
		if (ctx->md.brokers[i].node_id == id)
			return &ctx->md.brokers[i];
	return NULL;
}

/* Metadata of no topic: the brokers and the controller. */
static int refresh_brokers(adm_ctx *ctx)
{
	MetadataResponse md;
	int16_t v;
	proto_str none = proto_str_of("", 0);
	return adm_metadata(ctx, &none, 0, &md, &v) == 0 ? 0 : -1;
}

/* Connection to broker id; quiet: why gets the reason, nothing printed. */
static adm_conn *broker_conn(adm_ctx *ctx, int32_t id, char *why, size_t cap)
{
	const MetadataResponse_MetadataResponseBroker *b = adm_md_broker(ctx, id);
	if (!b) {
		snprintf(why, cap, "broker %d is not in the cluster's Metadata", (int)id);
		return NULL;
	}
	char host[256];
	snprintf(host, sizeof(host), "%.*s", b->host.len > 0 ? (int)b->host.len : 0, b->host.ptr);
	for (adm_ctx_conn *k = ctx->conns; k; k = k->next)
		if (k->c.fd >= 0 && k->c.port == b->port && strcmp(k->c.host, host) == 0) {
			k->c.node_id = id;
			return &k->c;
		}
	adm_conn *c = new_conn(ctx);
	if (adm_conn_open(c, host, b->port, id, ctx->timeout_ms, ctx->sec) < 0) {
		snprintf(why, cap, "%s", c->err);
		return NULL;
	}
	return c;
}

adm_conn *adm_broker(adm_ctx *ctx, int32_t id)
{
	if (!adm_md_broker(ctx, id) && refresh_brokers(ctx) < 0)
		return NULL;
	char why[1024];
	adm_conn *c = broker_conn(ctx, id, why, sizeof(why));
	if (!c)
		adm_error(ctx, "%s", why);
	return c;
}

int adm_broker_call(adm_ctx *ctx, int32_t id, const adm_api *api, const void *request,
		    void *response, int16_t *version)
{
	adm_conn *c = adm_broker(ctx, id);
	if (!c)
		return -1;
	if (adm_conn_call(c, api, request, &ctx->arena, response, version) < 0) {
		adm_error(ctx, "%s", c->err);
		return -1;
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int adm_controller_call(adm_ctx *ctx, const adm_api *api, const void *request, void *response,
			int16_t *version, adm_not_controller_fn not_controller)
{
	int64_t give_up = now_ms() + ctx->timeout_ms;
	int backoff = 100;
	char why[1024] = "";
	for (int attempt = 0; attempt < ADM_CONTROLLER_TRIES; attempt++) {
		if (attempt > 0) {
			if (now_ms() + backoff > give_up)
				break;
			sleep_ms(backoff);
			backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
		}
		/* Fresh Metadata for every try: the controller may have moved. */
		if (refresh_brokers(ctx) < 0)
			return -1;
		int32_t id = ctx->md.controller_id;
		if (id < 0) {
			snprintf(why, sizeof(why), "the cluster has no controller");
			continue;
		}
		adm_conn *c = broker_conn(ctx, id, why, sizeof(why));
		if (!c)
			continue;
		if (adm_conn_call(c, api, request, &ctx->arena, response, version) < 0) {
			snprintf(why, sizeof(why), "%s", c->err);
			if (c->fd >= 0) { /* nothing sent: no version in common */
				adm_error(ctx, "%s", why);
				return -1;
			}
			continue;
		}
		if (!not_controller || !not_controller(response))
			return 0;
		snprintf(why, sizeof(why), "broker %d answers NOT_CONTROLLER", (int)id);
	}
	adm_error(ctx, "%s: no controller answered (%s)", api->name, why);
	return -1;
}
