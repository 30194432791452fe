# syntax=docker/dockerfile:1
# rebalance-monitor's image: every subcommand (run, collect, simulate, kafka, ...) with the
# same .venv and the same Maven jar sets as `make setup` resolves on a developer machine
# (same Makefile, same jvm/*/pom.xml, same jvm/settings.xml). docs/operations.md.
#
#   docker build -t rebalance-monitor:0.1.0 .
#   docker run --rm rebalance-monitor:0.1.0 run --bootstrap-server broker:9092 ...
#
# The BuildKit cache mounts keep pip's and Maven's downloads between builds; neither ends up
# in the image (the jars are copied into /app/.cache/jars by `make setup`).

FROM python:3.11-slim-bookworm

# What the Makefile and the job need from the system: Java 17 (a JDK: the simulator compiles
# its KIP-848 consumer with javac), Maven (the jar sets), make, and ps for Spark's scripts.
# /usr/share/man/man1 is missing from slim images and the JDK's postinst needs it.
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        openjdk-17-jdk-headless maven make procps \
    && rm -rf /var/lib/apt/lists/*

# A non-root user owns the checkout, its .venv and .cache/jars, and /data (the compose
# stack's volume for the checkpoint and the Delta tables).
# (~/.cache and ~/.m2 are made here so that the cache mounts below do not leave them to root.)
RUN useradd --create-home --uid 10001 --shell /bin/bash app \
    && install -d -o app -g app /app /data /home/app/.cache /home/app/.m2
USER app
WORKDIR /app

COPY --chown=app:app . /app
RUN --mount=type=cache,target=/home/app/.cache/pip,uid=10001,gid=10001 \
    --mount=type=cache,target=/home/app/.m2,uid=10001,gid=10001 \
    make setup PYTHON=/usr/local/bin/python3.11

ENV PATH=/app/.venv/bin:$PATH \
    PYSPARK_PYTHON=/app/.venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/app/.venv/bin/python \
    PYTHONUNBUFFERED=1

# the job's Prometheus exporter (rebalance-monitor run --metrics-port)
EXPOSE 9108
ENTRYPOINT ["/app/.venv/bin/rebalance-monitor"]
CMD ["--help"]
