# syntax=docker/dockerfile:1
# An Android emulator farm in one container: SDK command-line tools, platform-tools (adb), the
# emulator, one x86_64 system image and an AVD made from it. The clean snapshot is made on
# first start (building has no KVM). Build from the docker/ directory:
#   docker build -f emulator.Dockerfile -t distrl-emulator:dev .
# Run (KVM required): docker run --device /dev/kvm --group-add "$(getent group kvm | cut -d: -f3)" \
#   -v distrl-avd:/home/android/.android/avd distrl-emulator:dev
FROM debian:12.11-slim

ARG CMDLINE_TOOLS_VERSION=11076708
ARG CMDLINE_TOOLS_SHA256=2d2d50857e4eb553af5a6dc3ad507a17adf43d115264b1afc116f95c92e5e258
ARG ANDROID_API=33
ARG SYSTEM_IMAGE="system-images;android-${ANDROID_API};google_apis;x86_64"
ARG AVD_NAME=distrl
ARG AVD_DEVICE=pixel_4

ENV ANDROID_HOME=/opt/android-sdk \
    ANDROID_SDK_ROOT=/opt/android-sdk \
    ANDROID_AVD_HOME=/home/android/.android/avd \
    AVD_NAME=${AVD_NAME} \
    PATH=/opt/android-sdk/cmdline-tools/latest/bin:/opt/android-sdk/platform-tools:/opt/android-sdk/emulator:${PATH}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Java 17 for sdkmanager/avdmanager; the rest are the shared libraries the emulator loads
# even when headless (-no-window).
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates curl unzip tini openjdk-17-jre-headless \
        libasound2 libdbus-1-3 libdrm2 libfontconfig1 libgbm1 libgl1 libglib2.0-0 libnss3 \
        libpulse0 libx11-6 libxcb1 libxcomposite1 libxcursor1 libxdamage1 libxext6 \
        libxfixes3 libxi6 libxkbfile1 libxrandr2 libxshmfence1 libxtst6 zlib1g \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system kvm \
    && useradd --create-home --uid 1000 --groups kvm android

# The command-line tools archive is checked against its published SHA-256.
RUN curl -fsSL -o /tmp/cmdline-tools.zip \
        "https://dl.google.com/android/repository/commandlinetools-linux-${CMDLINE_TOOLS_VERSION}_latest.zip" \
    && echo "${CMDLINE_TOOLS_SHA256}  /tmp/cmdline-tools.zip" | sha256sum -c - \
    && mkdir -p "${ANDROID_HOME}/cmdline-tools" \
    && unzip -q /tmp/cmdline-tools.zip -d /tmp/cmdline-tools \
    && mv /tmp/cmdline-tools/cmdline-tools "${ANDROID_HOME}/cmdline-tools/latest" \
    && rm -rf /tmp/cmdline-tools /tmp/cmdline-tools.zip \
    && (yes || true) | sdkmanager --licenses >/dev/null \
    && sdkmanager --install "platform-tools" "emulator" "${SYSTEM_IMAGE}" \
    && emulator -version | head -n 1

USER 1000:1000
WORKDIR /home/android
# A phone-sized AVD with a hardware keyboard (so `input text` reaches fields) and software GPU.
RUN mkdir -p "${ANDROID_AVD_HOME}" \
    && echo no | avdmanager create avd --name "${AVD_NAME}" --package "${SYSTEM_IMAGE}" \
        --device "${AVD_DEVICE}" \
    && cfg="${ANDROID_AVD_HOME}/${AVD_NAME}.avd/config.ini" \
    && for kv in hw.keyboard=yes hw.ramSize=2048 disk.dataPartition.size=6G \
            hw.gpu.enabled=yes hw.gpu.mode=swiftshader_indirect; do \
        sed -i "/^${kv%%=*}[[:space:]]*=/d" "${cfg}" && echo "${kv}" >> "${cfg}"; \
    done

COPY --chmod=0755 emulator/entrypoint.sh /usr/local/bin/emulator-entrypoint
COPY --chmod=0755 emulator/healthcheck.sh /usr/local/bin/emulator-healthcheck

# The first start boots cold and saves the snapshot: allow it a long start period.
HEALTHCHECK --interval=30s --timeout=30s --start-period=900s --retries=3 \
    CMD ["/usr/local/bin/emulator-healthcheck"]

ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/emulator-entrypoint"]
