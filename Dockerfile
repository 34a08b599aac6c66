# The web, worker and beat image. GPU workers build with --build-arg EXTRAS=labs (PyTorch
# with CUDA from PyPI); the web image stays without it.
FROM python:3.11-slim
ARG EXTRAS=""
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY config config
COPY assessments assessments
COPY lti lti
COPY gradesync gradesync
COPY labs labs
COPY analytics analytics
COPY ops ops
COPY api api
COPY templates templates
COPY locale locale
COPY manage.py ./
RUN pip install --no-cache-dir ".${EXTRAS:+[$EXTRAS]}" \
 && SECRET_KEY=build-only STATIC_MANIFEST=1 python manage.py collectstatic --noinput
RUN useradd --system --uid 10001 gcquiz \
 && mkdir -p /var/lib/gcquiz/metrics /var/lib/gcquiz/beat \
 && chown -R gcquiz /var/lib/gcquiz
USER gcquiz
EXPOSE 8000
CMD ["gunicorn", "-c", "config/gunicorn.py", "config.wsgi:application"]
