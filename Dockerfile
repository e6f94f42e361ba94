FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY migrations ./migrations
COPY src ./src
RUN pip install --no-cache-dir .
# Not root: PostgreSQL is the db service here, but keep the app unprivileged anyway.
RUN useradd --create-home agent
USER agent
CMD ["master-agent", "migrate"]
