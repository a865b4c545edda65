# zk-controller: the controller daemon, the reference broker and the admin CLI in one image.
#   docker build -t zk-controller .
#   docker run --rm zk-controller run --zookeeper zk:2181/kafka --controller-id 1 \
#       --metrics-listen 0.0.0.0:9309 --grpc-listen 0.0.0.0:9095
# Small (python:slim, no build tools in the final stage) and non-root (uid 10001).

FROM python:3.11-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY controller ./controller
RUN python -m venv /opt/zk-controller \
 && /opt/zk-controller/bin/pip install '.[sasl]' \
 && find /opt/zk-controller -name __pycache__ -prune -exec rm -rf {} +

FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="zk-controller" \
      org.opencontainers.image.description="Apache Kafka's ZooKeeper-mode controller as a standalone service" \
      org.opencontainers.image.licenses="Apache-2.0"
# tini as PID 1: the kernel drops signals with the default action to PID 1, so without an
# init a SIGTERM before the command's handlers exist would be lost (the command records one
# from its first moments, see controller/signals.py; tini covers the interpreter's start too),
# and tini reaps any orphaned child.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 zkc \
 && useradd --system --uid 10001 --gid zkc --home-dir /var/lib/zk-controller --no-create-home zkc \
 && install -d -o zkc -g zkc /var/lib/zk-controller
COPY --from=build /opt/zk-controller /opt/zk-controller
# No ZKC_* settings here: the environment outranks a config file, so an image default would
# silently beat the operator's controller.toml. Pass listen addresses by flag or config (the
# example above); logs default to the working directory below.
ENV PATH=/opt/zk-controller/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
WORKDIR /var/lib/zk-controller
EXPOSE 9309 9095
# Ready = connected to ZooKeeper (/readyz), for a standby as for the active controller.
# It probes 127.0.0.1 at the port of ZKC_METRICS_LISTEN (9309 when unset): another metrics
# port, or a host other than 127.0.0.1 or a wildcard (given by flag, file or that variable),
# needs its own health check (Compose and Kubernetes define theirs; see docs/operations.md).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os,urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('ZKC_METRICS_LISTEN', ':9309').rpartition(':')[2] + '/readyz', timeout=2)"]
# SIGTERM: the controller resigns (a standby takes over at once) and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--", "zk-controller"]
CMD ["run"]
