# The application image: web, worker, beat and migrate use it as built by default; lab workers
# build it with --build-arg EXTRAS=labs (PyTorch): the CPU lab worker with PyTorch's CPU wheels
# (PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu), the GPU worker with PyPI's CUDA
# ones. Where Docker Hub cannot be reached, docker/base-images/build.sh builds python:3.11-slim.
FROM python:3.11-slim
ARG EXTRAS=""
ARG PIP_EXTRA_INDEX_URL=""
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# Certificates of a TLS-inspecting egress (docker/ca-certificates/*.crt; usually none) and
# wheels that cannot be downloaded here (docker/wheels/*.whl; usually none): docs/operations.md.
COPY docker/ca-certificates/ /usr/local/share/ca-certificates/extra/
COPY docker/wheels/ /tmp/wheels/
RUN update-ca-certificates >/dev/null
COPY pyproject.toml README.md ./
COPY config config
COPY assessments assessments
COPY lti lti
COPY activities activities
COPY gradesync gradesync
COPY labs labs
COPY analytics analytics
COPY ops ops
COPY api api
COPY templates templates
COPY static static
COPY locale locale
COPY manage.py ./
RUN PIP_CERT=/etc/ssl/certs/ca-certificates.crt pip install --no-cache-dir \
      --find-links /tmp/wheels ".${EXTRAS:+[$EXTRAS]}" \
 && rm -rf /tmp/wheels \
 && SECRET_KEY=build-only STATIC_MANIFEST=1 python manage.py collectstatic --noinput
RUN useradd --system --uid 10001 --create-home --home-dir /home/gcquiz gcquiz \
 && mkdir -p /var/lib/gcquiz/metrics /var/lib/gcquiz/beat \
 && chown -R gcquiz /var/lib/gcquiz
USER gcquiz
EXPOSE 8000
CMD ["gunicorn", "-c", "config/gunicorn.py", "config.wsgi:application"]
