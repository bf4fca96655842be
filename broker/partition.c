/*
 * partition.c - one partition: controller state, role, followers, high
 * watermark (partition.h).
 */
#include "broker/partition.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/err.h"

static bool contains(const int32_t *v, int32_t n, int32_t id)
{
	for (int32_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

static int32_t *ids_dup(const int32_t *v, int32_t n)
{
	int32_t *c = malloc((size_t)(n > 0 ? n : 1) * sizeof(*c));
	if (c && n > 0)
		memcpy(c, v, (size_t)n * sizeof(*c));
	return c;
}

static bool alive(const brk_replica_env *env, int32_t id)
{
	return !env->alive || env->alive(env->alive_arg, id);
}

static void drop_proposal(brk_partition *p)
{
	free(p->proposed_isr);
	p->proposed_isr = NULL;
	p->nproposed_isr = 0;
	p->isr_call = 0;
}

void brk_partition_clear(brk_partition *p)
{
	free(p->replicas);
	free(p->isr);
	free(p->adding);
	free(p->removing);
	free(p->followers);
	drop_proposal(p);
	p->replicas = p->isr = p->adding = p->removing = NULL;
	p->followers = NULL;
	p->nreplicas = p->nisr = p->nadding = p->nremoving = p->nfollowers = 0;
}

bool brk_partition_in_isr(const brk_partition *p, int32_t broker_id)
{
	return contains(p->isr, p->nisr, broker_id) ||
	       (p->proposed_isr && contains(p->proposed_isr, p->nproposed_isr, broker_id));
}

int32_t brk_partition_maximal_isr_size(const brk_partition *p)
{
	int32_t n = p->nisr;
	for (int32_t i = 0; p->proposed_isr && i < p->nproposed_isr; i++)
		if (!contains(p->isr, p->nisr, p->proposed_isr[i]))
			n++;
	return n;
}

static brk_follower *follower(brk_partition *p, int32_t broker_id)
{
	for (int32_t i = 0; i < p->nfollowers; i++)
		if (p->followers[i].broker_id == broker_id)
			return &p->followers[i];
	return NULL;
}

/* One entry per replica other than this broker, fresh for a new epoch:
 * ISR members count as caught up now (Partition.makeLeader). Keeps the old
 * entries of the same brokers when keep is set (same epoch, replicas
 * changed). Returns 0 or -ENOMEM. */
static int reset_followers(brk_partition *p, const brk_replica_env *env, int64_t now_ms, bool keep)
{
	brk_follower *f = calloc((size_t)(p->nreplicas > 0 ? p->nreplicas : 1), sizeof(*f));
	if (!f)
		return -ENOMEM;
	int32_t n = 0;
	for (int32_t i = 0; i < p->nreplicas; i++) {
		int32_t id = p->replicas[i];
		if (id == env->broker_id)
			continue;
		brk_follower *old = keep ? follower(p, id) : NULL;
		if (old) {
			f[n++] = *old;
			continue;
		}
		f[n].broker_id = id;
		f[n].log_end_offset = -1;
		f[n].log_start_offset = -1;
		f[n].last_caught_up_ms = contains(p->isr, p->nisr, id) ? now_ms : 0;
		n++;
	}
	free(p->followers);
	p->followers = f;
	p->nfollowers = n;
	return 0;
}

static void wake(brk_partition *p)
{
	brk_watchlist_notify(&p->hw_waiters, 0);
	brk_watchlist_notify(&p->log_waiters, 0);
}

int brk_partition_apply_state(brk_partition *p, const ctl_partition *st, const brk_replica_env *env,
			      int64_t now_ms)
{
	bool known = p->leader_epoch >= 0;
	if (known && st->leader_epoch < p->leader_epoch)
		return BRK_STATE_IGNORED;
	bool same_epoch = known && st->leader_epoch == p->leader_epoch;
	if (same_epoch && st->partition_epoch < p->partition_epoch)
		return BRK_STATE_IGNORED;
	int32_t *replicas = ids_dup(st->replicas, st->nreplicas);
	int32_t *isr = ids_dup(st->isr, st->nisr);
	int32_t *adding = st->nadding > 0 ? ids_dup(st->adding, st->nadding) : NULL;
	int32_t *removing = st->nremoving > 0 ? ids_dup(st->removing, st->nremoving) : NULL;
	if (!replicas || !isr || (st->nadding > 0 && !adding) || (st->nremoving > 0 && !removing)) {
		free(replicas);
		free(isr);
		free(adding);
		free(removing);
		return -ENOMEM;
	}
	free(p->adding);
	free(p->removing);
	p->adding = adding;
	p->nadding = adding ? st->nadding : 0;
	p->removing = removing;
	p->nremoving = removing ? st->nremoving : 0;
	free(p->replicas);
	free(p->isr);
	p->replicas = replicas;
	p->nreplicas = st->nreplicas;
	p->isr = isr;
	p->nisr = st->nisr;
	p->partition_epoch = st->partition_epoch;
	p->controller_epoch = st->controller_epoch;
	if (same_epoch) {
		if (p->role == BRK_ROLE_LEADER) {
			reset_followers(p, env, now_ms, true);
			brk_partition_maybe_advance_hw(p, env, now_ms);
		}
		wake(p);
		return BRK_STATE_UPDATED;
	}
	brk_role was = p->role;
	p->leader = st->leader;
	p->leader_epoch = st->leader_epoch;
	drop_proposal(p);
	bool replica_here = contains(p->replicas, p->nreplicas, env->broker_id);
	if (!replica_here)
		p->role = BRK_ROLE_NONE;
	else if (p->leader == env->broker_id)
		p->role = BRK_ROLE_LEADER;
	else
		p->role = BRK_ROLE_FOLLOWER;
	free(p->followers);
	p->followers = NULL;
	p->nfollowers = 0;
	if (p->role != BRK_ROLE_LEADER)
		p->led_since_epoch = -1;
	else if (was != BRK_ROLE_LEADER)
		p->led_since_epoch = p->leader_epoch;
	if (p->role == BRK_ROLE_LEADER && p->log) {
		p->leader_epoch_start_offset = log_end_offset(p->log);
		log_assign_leader_epoch(p->log, p->leader_epoch);
		reset_followers(p, env, now_ms, false);
		brk_partition_maybe_advance_hw(p, env, now_ms);
	}
	wake(p);
	return BRK_STATE_NEW_EPOCH;
}

int brk_partition_describe(const brk_partition *p, const brk_replica_env *env, proto_arena *a,
			   brk_partition_view *out)
{
	out->leader = p->leader;
	out->leader_unavailable = false;
	out->isr = p->isr;
	out->nisr = p->nisr;
	out->offline = NULL;
	out->noffline = 0;
	for (int32_t i = 0; i < p->nreplicas; i++) {
		if (alive(env, p->replicas[i]))
			continue;
		if (!out->offline &&
		    !(out->offline = proto_arena_alloc(a, (size_t)p->nreplicas * sizeof(int32_t))))
			return -1;
		out->offline[out->noffline++] = p->replicas[i];
	}
	bool leader_here = p->leader == env->broker_id;
	if (p->leader >= 0 && alive(env, p->leader) && !(leader_here && !p->log))
		return 0;
	out->leader = -1;
	out->leader_unavailable = true;
	if (leader_here && out->noffline == 0) {
		/* This broker leads but its log is offline. */
		if (!(out->offline = proto_arena_alloc(a, sizeof(int32_t))))
			return -1;
		out->offline[0] = env->broker_id;
		out->noffline = 1;
		out->nisr = 0;
	}
	return 0;
}

int16_t brk_partition_check_epoch(const brk_partition *p, int32_t current_leader_epoch)
{
	if (current_leader_epoch < 0 || current_leader_epoch == p->leader_epoch)
		return KERR_NONE;
	return current_leader_epoch < p->leader_epoch ? KERR_FENCED_LEADER_EPOCH
						      : KERR_UNKNOWN_LEADER_EPOCH;
}

int16_t brk_partition_leader_error(const brk_partition *p, int32_t current_leader_epoch)
{
	if (p->role == BRK_ROLE_NONE)
		return KERR_NOT_LEADER_OR_FOLLOWER;
	if (!p->log)
		return KERR_KAFKA_STORAGE_ERROR;
	int16_t err = brk_partition_check_epoch(p, current_leader_epoch);
	if (err)
		return err;
	return p->role == BRK_ROLE_LEADER ? KERR_NONE : KERR_NOT_LEADER_OR_FOLLOWER;
}

bool brk_partition_follower_caught_up(const brk_partition *p, const brk_follower *f,
				      const brk_replica_env *env, int64_t now_ms)
{
	if (p->log && f->log_end_offset == log_end_offset(p->log))
		return true;
	return f->last_caught_up_ms > 0 && now_ms - f->last_caught_up_ms <= env->replica_lag_time_max_ms;
}

bool brk_partition_maybe_advance_hw(brk_partition *p, const brk_replica_env *env, int64_t now_ms)
{
	if (p->role != BRK_ROLE_LEADER || !p->log)
		return false;
	int64_t hw = log_end_offset(p->log);
	for (int32_t i = 0; i < p->nfollowers; i++) {
		const brk_follower *f = &p->followers[i];
		bool counts = brk_partition_in_isr(p, f->broker_id) ||
			      (alive(env, f->broker_id) && f->last_caught_up_ms > 0 &&
			       now_ms - f->last_caught_up_ms <= env->replica_lag_time_max_ms);
		if (counts && f->log_end_offset < hw)
			hw = f->log_end_offset;
	}
	if (hw <= log_high_watermark(p->log))
		return false;
	log_set_high_watermark(p->log, hw);
	brk_watchlist_notify(&p->hw_waiters, 0);
	return true;
}

brk_follower *brk_partition_follower_fetched(brk_partition *p, int32_t broker_id,
					     int64_t fetch_offset, int64_t log_start_offset,
					     const brk_replica_env *env, int64_t now_ms)
{
	brk_follower *f = follower(p, broker_id);
	if (!f || !p->log)
		return NULL;
	int64_t leo = log_end_offset(p->log);
	if (fetch_offset >= leo) {
		if (now_ms > f->last_caught_up_ms)
			f->last_caught_up_ms = now_ms;
	} else if (fetch_offset >= f->last_fetch_leader_leo && f->last_fetch_ms > f->last_caught_up_ms) {
		f->last_caught_up_ms = f->last_fetch_ms;
	}
	f->log_end_offset = fetch_offset;
	f->log_start_offset = log_start_offset;
	f->last_fetch_leader_leo = leo;
	f->last_fetch_ms = now_ms;
	brk_partition_maybe_advance_hw(p, env, now_ms);
	return f;
}

bool brk_partition_wanted_isr(const brk_partition *p, const brk_replica_env *env, int64_t now_ms,
			      int32_t **out, int32_t *nout)
{
	*out = NULL;
	*nout = 0;
	if (p->role != BRK_ROLE_LEADER || !p->log || p->proposed_isr)
		return false;
	int32_t *isr = malloc((size_t)(p->nreplicas + p->nisr + 1) * sizeof(*isr));
	if (!isr)
		return false;
	int32_t n = 0;
	bool changed = false;
	int64_t hw = log_high_watermark(p->log);
	for (int32_t i = 0; i < p->nisr; i++) {
		int32_t id = p->isr[i];
		const brk_follower *f = id == env->broker_id ? NULL : follower((brk_partition *)p, id);
		if (f && !brk_partition_follower_caught_up(p, f, env, now_ms)) {
			changed = true; /* shrink */
			continue;
		}
		isr[n++] = id;
	}
	if (!contains(isr, n, env->broker_id)) {
		/* the leader is always in its own ISR */
		isr[n++] = env->broker_id;
		changed = true;
	}
	for (int32_t i = 0; i < p->nfollowers; i++) {
		const brk_follower *f = &p->followers[i];
		if (contains(p->isr, p->nisr, f->broker_id))
			continue;
		if (f->log_end_offset >= 0 && f->log_end_offset >= hw &&
		    f->log_end_offset >= p->leader_epoch_start_offset && alive(env, f->broker_id)) {
			isr[n++] = f->broker_id; /* expand */
			changed = true;
		}
	}
	if (!changed) {
		free(isr);
		return false;
	}
	*out = isr;
	*nout = n;
	return true;
}

int brk_partition_propose_isr(brk_partition *p, const int32_t *isr, int32_t n, uint64_t call)
{
	int32_t *c = ids_dup(isr, n);
	if (!c)
		return -ENOMEM;
	drop_proposal(p);
	p->proposed_isr = c;
	p->nproposed_isr = n;
	p->isr_call = call;
	return 0;
}

void brk_partition_isr_changed(brk_partition *p, bool ok, int32_t partition_epoch,
			       const brk_replica_env *env, int64_t now_ms)
{
	if (ok && p->proposed_isr && partition_epoch > p->partition_epoch) {
		free(p->isr);
		p->isr = p->proposed_isr;
		p->nisr = p->nproposed_isr;
		p->proposed_isr = NULL;
		p->nproposed_isr = 0;
		p->partition_epoch = partition_epoch;
	}
	drop_proposal(p);
	brk_partition_maybe_advance_hw(p, env, now_ms);
	wake(p);
}
