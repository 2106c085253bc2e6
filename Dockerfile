# syntax=docker/dockerfile:1.7
# Two images from one file (docs/operations.md says how to run them; deploy/compose.yaml runs them):
#   docker build --target bot -t kernelevo-bot .        # the GitHub App, its bot-queue worker (no CUDA, no torch)
#   docker build --target worker -t kernelevo-worker .  # a search worker for one GPU (CUDA runtime, torch, triton)
# Neither image holds a secret: settings come at run time, secrets as files under /run/secrets, which the one
# settings object (kernelevo/settings.py) reads when it is first used.
# Base images are pinned by exact tag; add "@sha256:..." digests from your registry mirror when you build.

ARG PYTHON_VERSION=3.12.12
ARG CUDA_IMAGE=nvidia/cuda:13.0.2-runtime-ubuntu24.04
# torch comes from PyTorch's CUDA 13.0 index (the cuda extra is CUDA 13: cuda-core[cu13], nvidia-cuda-cupti>=13).
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu130

# ---------------------------------------------------------------------------------------------------------------
# The bot's virtualenv. The bot package never imports torch (discovery is AST-only, searches run on the workers;
# tests/deploy checks it), so torch, pyproject's one heavy dependency, is left out: every other dependency and the
# bot extra are read from pyproject.toml, and the project itself is installed without resolving its dependencies.
FROM python:${PYTHON_VERSION}-slim-bookworm AS bot-build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
RUN python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
print("\n".join(d for d in p["dependencies"] + p["optional-dependencies"]["bot"] if not d.startswith("torch")))' \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt
COPY kernelevo ./kernelevo
COPY evaluator ./evaluator
COPY workflows ./workflows
COPY bot ./bot
RUN pip install --no-deps . \
    && python -c "import bot.service, bot.worker, kernelevo.cli, workflows.celery_app"

# ---------------------------------------------------------------------------------------------------------------
# The bot image: `kernelevo serve` (webhooks + its bot-queue worker) or `kernelevo bot-worker`; no GPU, no torch.
FROM python:${PYTHON_VERSION}-slim-bookworm AS bot
# The cache dir holds the bot's checkouts (downloaded for static discovery and packing, never run).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/venv/bin:$PATH KERNELEVO_CACHE_DIR=/var/cache/kernelevo
COPY --from=bot-build /opt/venv /opt/venv
RUN useradd --system --uid 10001 --user-group --home-dir /home/kernelevo --create-home --shell /usr/sbin/nologin \
        kernelevo \
    && install -d -o 10001 -g 10001 -m 0700 /var/cache/kernelevo
USER 10001:10001
WORKDIR /home/kernelevo
EXPOSE 8080
# /healthz answers 200 only while Redis answers the bot (bot/app.py); the bot worker's check is in compose.yaml.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"]
CMD ["kernelevo", "serve", "--host", "0.0.0.0", "--port", "8080"]

# ---------------------------------------------------------------------------------------------------------------
# The worker's system layer: Python with its headers and a C compiler (Triton's launcher stubs, the kernel-trace
# shim), bubblewrap (every untrusted process runs in it), prlimit (util-linux, in the base), compute-sanitizer
# (NVIDIA's apt repository, configured in the CUDA image).
FROM ${CUDA_IMAGE} AS worker-base
ENV DEBIAN_FRONTEND=noninteractive PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        bubblewrap \
        ca-certificates \
        cuda-sanitizer-13-0 \
        gcc \
        libc6-dev \
        python3 \
        python3-dev \
        python3-venv \
    && rm -rf /var/lib/apt/lists/*

# The worker's virtualenv: torch from PyTorch's CUDA index, then the project with the extras a GPU worker uses.
FROM worker-base AS worker-build
ARG TORCH_VERSION
ARG TORCH_INDEX
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
RUN pip install --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}"
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kernelevo ./kernelevo
COPY evaluator ./evaluator
COPY workflows ./workflows
COPY bot ./bot
# The project itself, from this source tree; its dependencies resolve within pyproject.toml's ranges.
# hadolint ignore=DL3013
RUN pip install ".[triton,cuda,llm,worker]" \
    && python -c "import torch, triton, kernelevo.cli, workflows.celery_app, evaluator.session"

# The worker image: one `kernelevo worker` per GPU. The container is given exactly one GPU (a device
# reservation), which it sees as GPU 0: hence `--gpu 0` in every worker container.
FROM worker-base AS worker
ENV PATH=/opt/venv/bin:$PATH KERNELEVO_CACHE_DIR=/var/cache/kernelevo
COPY --from=worker-build /opt/venv /opt/venv
RUN useradd --system --uid 10001 --user-group --home-dir /home/kernelevo --create-home --shell /usr/sbin/nologin \
        kernelevo \
    && install -d -o 10001 -g 10001 -m 0700 /var/cache/kernelevo
USER 10001:10001
WORKDIR /home/kernelevo
# A Celery ping of this container's own node (`gpu0@<hostname>`, the name `kernelevo worker --gpu 0` takes): the
# worker's parent answers it between and during chunks; it fails when the worker is gone or cannot reach Redis.
HEALTHCHECK --interval=60s --timeout=30s --start-period=120s --retries=3 \
    CMD ["sh", "-c", "exec celery -A workflows.celery_app inspect ping --timeout 10 -d \"gpu0@$(hostname)\""]
CMD ["kernelevo", "worker", "--gpu", "0"]
