"""rebalance-monitor's streaming side: Kafka codec, collector, Spark job, sinks and the CLI."""
