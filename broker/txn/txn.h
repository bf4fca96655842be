/* txn/txn.h - placeholder. */
#ifndef SAMSA_BROKER_TXN_TXN_PLACEHOLDER_H
#define SAMSA_BROKER_TXN_TXN_PLACEHOLDER_H
#endif
