// The browser tests' Chromium (playwright-core driving the system's, or CHROMIUM_PATH's, as
// scripts/systemTools.mjs installs it): headless, without a sandbox, the GPU or background traffic.
import { chromium, type Browser } from 'playwright-core';

/** A page may use a fake microphone and camera without asking. */
export const FAKE_MEDIA_ARGS = ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream'];

/** Launches the tests' Chromium with `args` after the common ones. */
export function launchChromium(args: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', ...args],
  });
}
