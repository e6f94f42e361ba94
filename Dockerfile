# The service image: `master-agent serve` on 0.0.0.0:8000 (API, LangGraph API and web console), as an
# unprivileged numeric user (Kubernetes' runAsNonRoot can check it), local state in the /data volume.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MASTER_AGENT_HOST=0.0.0.0 \
    MASTER_AGENT_PORT=8000 \
    MASTER_AGENT_DATA_DIR=/data
WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY migrations ./migrations
COPY src ./src
RUN pip install --no-cache-dir .
# A volume mounted on /data starts with the image's /data, so this ownership carries over to it.
RUN useradd --uid 10001 --create-home agent && mkdir -p /data && chown 10001:10001 /data
USER 10001
VOLUME ["/data"]
EXPOSE 8000
# Healthy once /ok answers 200: the database reachable and routing warmed up (503 until then).
HEALTHCHECK --interval=10s --timeout=5s --start-period=90s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/ok', timeout=4)"]
CMD ["master-agent", "serve"]
