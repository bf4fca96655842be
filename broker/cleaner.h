/*
 * cleaner.h - the log cleaner of the broker (Kafka's LogCleaner and
 * LogCleanerManager): compaction of the partitions whose topic has
 * cleanup.policy compact (or compact,delete), the internal topics included,
 * off the event loop (DESIGN.md decision 5).
 *
 * Every log.cleaner.backoff.ms (at once again after a round that cleaned
 * something) the loop picks the dirtiest compacted log (Kafka's
 * grabFilthiestCompactedLog): the largest dirty ratio among the logs whose
 * ratio is above their min.cleanable.dirty.ratio, or whose
 * max.compaction.lag.ms is exceeded with bytes to clean. The round's
 * blocking part (storage/cleaner.h log_clean_run) runs on the cleaner
 * thread; the swap runs back on the loop, woken through an eventfd, and the
 * new first dirty offset goes to <log.dirs>/cleaner-offset-checkpoint
 * (Kafka's offset checkpoint format, written off the loop by the flush
 * worker). One round at a time: log.cleaner.threads above 1 is accepted and
 * gives each round the dedupe buffer share of one thread; 0 or
 * log.cleaner.enable=false turns the cleaner off.
 */
#ifndef SAMSA_BROKER_CLEANER_H
#define SAMSA_BROKER_CLEANER_H

/* Read the checkpoint file, start the thread and the timer (the loop
 * thread, after brk_partitions_open). Returns 0 or -errno. */
int brk_cleaner_start(void);

/* Abort a round in progress (its files are removed), join the thread.
 * Call before brk_partitions_shutdown. Safe when not started. */
void brk_cleaner_stop(void);

#endif
