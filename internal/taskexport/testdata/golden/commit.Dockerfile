FROM cwm/proj-0123456789ab:latest
WORKDIR /repo
