# syntax=docker/dockerfile:1
# Two images from one file:
#   docker build --target bot -t kernelevo-bot .        # the GitHub App (no GPU, no torch compute)
#   docker build --target worker -t kernelevo-worker .  # a GPU worker (CUDA base image, torch + triton)
# Neither image holds secrets: pass KERNELEVO_* settings at run time (see docs/github-app.md).

ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim AS bot
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY kernelevo ./kernelevo
COPY evaluator ./evaluator
COPY workflows ./workflows
COPY bot ./bot
# The bot parses and publishes; it never evaluates kernels, so it gets a CPU torch build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch>=2.5" \
    && pip install ".[bot,worker]"
RUN useradd --create-home --uid 10001 kernelevo
USER kernelevo
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz')"
CMD ["kernelevo", "serve", "--host", "0.0.0.0", "--port", "8080"]

FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04 AS worker
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    KERNELEVO_CACHE_DIR=/var/cache/kernelevo VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev build-essential ninja-build git \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv
WORKDIR /app
COPY pyproject.toml README.md ./
COPY kernelevo ./kernelevo
COPY evaluator ./evaluator
COPY workflows ./workflows
COPY bot ./bot
RUN pip install "torch>=2.5" && pip install ".[triton,cuda,llm,worker,plots]"
RUN useradd --create-home --uid 10001 kernelevo && mkdir -p /var/cache/kernelevo \
    && chown kernelevo /var/cache/kernelevo
USER kernelevo
# One worker per GPU: run with CUDA_VISIBLE_DEVICES set to a single device and concurrency 1.
CMD ["kernelevo", "--help"]
