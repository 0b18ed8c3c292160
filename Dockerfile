# syntax=docker/dockerfile:1
# Every Hyperpilot image, built from the repository root with one target per image:
#   docker build --target gateway -t hyperpilot/gateway:dev .
# Targets: gateway, cluster-svc, workload-svc, inference-svc, mcp-svc, sim. Every image carries
# the whole wheel (shared contracts, migrations and all service packages); the images differ
# only in the command they run, the port they expose and their health check.
ARG PYTHON_BASE=python:3.11-slim-bookworm

FROM ${PYTHON_BASE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Third-party dependencies first, exactly as pinned in requirements.lock, so this layer is reused
# across source changes and across the images.
RUN python -m venv /opt/venv
COPY requirements.lock ./
RUN /opt/venv/bin/pip install --no-deps -r requirements.lock
# The project itself, built as one non-editable wheel by a pinned build backend kept out of the
# runtime environment.
RUN python -m pip install hatchling==1.33.0
COPY pyproject.toml ./
COPY shared ./shared
COPY sim ./sim
COPY hyperpilot ./hyperpilot
COPY services ./services
RUN python -m pip wheel --no-deps --no-build-isolation -w /wheels . \
 && /opt/venv/bin/pip install --no-deps /wheels/*.whl

# What every image shares: the installed virtualenv, run by an unprivileged user.
FROM ${PYTHON_BASE} AS runtime
RUN groupadd --system --gid 10001 hyperpilot \
 && useradd --system --uid 10001 --gid hyperpilot --create-home --home-dir /home/hyperpilot \
      --shell /usr/sbin/nologin hyperpilot
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /home/hyperpilot
USER 10001:10001
# python:slim has no curl: every health check below uses the standard library.

# Gateway: REST API, web UI and live event stream on port 3099.
FROM runtime AS gateway
# Listen on every interface of the container (the setting defaults to loopback for laptops).
ENV GATEWAY_HOST=0.0.0.0 GATEWAY_PORT=3099
EXPOSE 3099
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:3099/healthz', timeout=3).status == 200 else 1)"]
CMD ["python", "-m", "gateway"]

# The NATS workers share a health endpoint on HEALTH_PORT.
FROM runtime AS worker
ENV HEALTH_PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, sys, urllib.request; port = os.environ.get('HEALTH_PORT', '8080'); sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:' + port + '/healthz', timeout=3).status == 200 else 1)"]

# cluster-svc: consumes cmd.cluster.> (EKS, HyperPod, networking, storage).
FROM worker AS cluster-svc
CMD ["python", "-m", "cluster_svc"]

# workload-svc: consumes cmd.workload.> (training jobs, Ray jobs, recipes, logs).
FROM worker AS workload-svc
CMD ["python", "-m", "workload_svc"]

# inference-svc: consumes cmd.inference.> (managed and self-managed endpoints).
FROM worker AS inference-svc
CMD ["python", "-m", "inference_svc"]

# mcp-svc: MCP tools over streamable HTTP on port 8765 (path /mcp), wrapping the REST API.
FROM runtime AS mcp-svc
# Streamable HTTP on all interfaces of the container (path /mcp); write tools stay off unless
# MCP_ALLOW_WRITE=true is set explicitly. Bound beyond loopback, the server does not start
# without its bearer token: mount it as a secret and set MCP_HTTP_TOKEN_FILE to its path
# (docker-compose.yml does, from /run/secrets/mcp_http_token).
ENV MCP_TRANSPORT=streamable-http \
    MCP_HOST=0.0.0.0 \
    MCP_PORT=8765 \
    MCP_ALLOW_WRITE=false
EXPOSE 8765
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import socket; socket.create_connection(('127.0.0.1', 8765), timeout=3).close()"]
CMD ["python", "-m", "mcp_svc"]

# Simulated world (simulated AWS + Kubernetes API emulator) on port 5000, for local use and tests.
FROM runtime AS sim
EXPOSE 5000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:5000/_sim/health', timeout=3).status == 200 else 1)"]
CMD ["python", "-m", "sim", "--host", "0.0.0.0", "--port", "5000", "--profile", "fast"]
