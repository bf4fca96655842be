/* txn/coordinator.c - placeholder, being written. */
