"""rebalance-monitor's streaming side: Kafka codec, collector, Spark job, sinks and the CLI.

Every error raised here on purpose derives from one root,
:class:`streaming.errors.RebalanceMonitorError`; :mod:`streaming.errors` draws the
hierarchy and maps errors to exit codes for every subcommand.
"""
