FROM cwm/proj-0123456789ab:latest
WORKDIR /repo
COPY bug.patch /tmp/bug.patch
RUN git checkout -q --detach && git apply --index /tmp/bug.patch && rm /tmp/bug.patch && \
    GIT_AUTHOR_NAME=cwm GIT_AUTHOR_EMAIL=cwm@localhost GIT_COMMITTER_NAME=cwm GIT_COMMITTER_EMAIL=cwm@localhost \
    GIT_AUTHOR_DATE=2024-05-06T07:08:09Z GIT_COMMITTER_DATE=2024-05-06T07:08:09Z git commit -q --no-verify -m 'proj__operators-123: the bug of the task'
