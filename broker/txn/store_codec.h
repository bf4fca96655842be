/* txn/store_codec.h - placeholder. */
#ifndef SAMSA_BROKER_TXN_STORE_CODEC_PLACEHOLDER_H
#define SAMSA_BROKER_TXN_STORE_CODEC_PLACEHOLDER_H
#endif
