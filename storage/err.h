/*
 * err.h - the errors of storage/ beyond -errno: every function of the
 * storage modules returns 0 (or a count), a negative errno (-EIO, -ENOSPC,
 * ...) or one of these. They are below -2000, out of errno's range. The
 * broker maps each to Kafka's error (named beside it).
 */
#ifndef SAMSA_STORAGE_ERR_H
#define SAMSA_STORAGE_ERR_H

enum {
	LOG_ERR_OFFSET_OUT_OF_RANGE = -2001,    /* OFFSET_OUT_OF_RANGE */
	LOG_ERR_CORRUPT = -2002,                /* a file that does not parse (CORRUPT_MESSAGE) */
	/* Idempotent producer checks (Kafka's ProducerAppendInfo): */
	LOG_ERR_INVALID_PRODUCER_EPOCH = -2003, /* INVALID_PRODUCER_EPOCH */
	LOG_ERR_OUT_OF_ORDER_SEQUENCE = -2004,  /* OUT_OF_ORDER_SEQUENCE_NUMBER */
	/* Transactions (Kafka's ProducerAppendInfo, KIP-98): */
	LOG_ERR_INVALID_TXN_STATE = -2005,      /* INVALID_TXN_STATE */
	LOG_ERR_TRANSACTION_COORDINATOR_FENCED = -2006, /* TRANSACTION_COORDINATOR_FENCED */
	/* A follower's batches below the log end offset or not increasing
	 * (Kafka's UnexpectedAppendOffsetException, OffsetsOutOfOrderException): */
	LOG_ERR_UNEXPECTED_OFFSET = -2007,
};

#endif
