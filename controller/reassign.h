/*
 * reassign.h - the replica sets of a partition reassignment (KIP-455), as
 * Kafka's controller computes them (ReplicaAssignment and the checks of
 * KafkaController.processApiPartitionReassignment), shared by the back
 * ends. Pure functions: no ZooKeeper, no threads.
 *
 * Notation (CLUSTER.md 2.8): RS the replicas a partition has (the topic
 * znode's list), AR the replicas being added, RR those being removed;
 * ORS = RS - AR is the original set, TRS = RS - RR the target. During a
 * reassignment RS = TRS followed by the members of ORS not in TRS
 * (ReplicaAssignment.reassignTo: (TRS ++ ORS).distinct), AR = RS - ORS,
 * RR = RS - TRS. A partition is being reassigned while AR or RR is not
 * empty; a reassignment to TRS is complete when every member of TRS is in
 * the ISR.
 */
#ifndef SAMSA_CONTROLLER_REASSIGN_H
#define SAMSA_CONTROLLER_REASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A partition's assignment: RS with AR and RR. */
typedef struct ctl_reassign_sets {
	int32_t *replicas; /* RS, in order */
	int32_t nreplicas;
	int32_t *adding;   /* AR */
	int32_t nadding;
	int32_t *removing; /* RR */
	int32_t nremoving;
} ctl_reassign_sets;

/* Free the arrays of s (when it owns them: ctl_reassign_to's output). */
void ctl_reassign_sets_free(ctl_reassign_sets *s);

/* Whether AR or RR is not empty. */
bool ctl_reassign_in_progress(const ctl_reassign_sets *s);

/* ORS (RS - AR) and TRS (RS - RR), in RS order, into out (room for
 * s->nreplicas ids); returns their number. */
int32_t ctl_reassign_origin(const ctl_reassign_sets *s, int32_t *out);
int32_t ctl_reassign_target(const ctl_reassign_sets *s, int32_t *out);

/* Whether every id of v[0..n) is in isr[0..nisr). */
bool ctl_reassign_all_in(const int32_t *v, int32_t n, const int32_t *isr, int32_t nisr);

/*
 * Kafka's reassignTo: the assignment of cur reassigned to target[0..n),
 * into *out (arrays malloc'ed; free with ctl_reassign_sets_free): RS =
 * (target ++ ORS) without repeats, AR = RS - ORS, RR = RS - target. A
 * target equal to ORS gives RS = ORS and no AR or RR (a cancellation).
 * Returns 0 or -ENOMEM.
 */
int ctl_reassign_to(const ctl_reassign_sets *cur, const int32_t *target, int32_t n,
		    ctl_reassign_sets *out);

/* Whether two assignments are the same (lists and their order). */
bool ctl_reassign_equal(const ctl_reassign_sets *a, const ctl_reassign_sets *b);

/*
 * Kafka's validateReplicas for a target list of the API: empty, a
 * repeated id, a negative id, or an id that would be added (in target,
 * not in cur's ORS; cur NULL: a partition that does not exist, whose every
 * target is added) without being a live broker (live(arg, id); Kafka's
 * liveBrokerIds, which leaves out brokers in controlled shutdown) are
 * INVALID_REPLICA_ASSIGNMENT with Kafka's message in msg. Returns a Kafka
 * error code (NONE when valid).
 */
int16_t ctl_reassign_validate(const int32_t *target, int32_t n, const ctl_reassign_sets *cur,
			      bool (*live)(const void *arg, int32_t id), const void *arg,
			      char *msg, size_t cap);

#endif
