/* txn/store.h - placeholder. */
#ifndef SAMSA_BROKER_TXN_STORE_PLACEHOLDER_H
#define SAMSA_BROKER_TXN_STORE_PLACEHOLDER_H
#endif
