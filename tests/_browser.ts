/**
 * Headless Chromium for the UI tests, driven by puppeteer-core over the DevTools protocol.
 * Uses the Debian package's `/usr/bin/chromium` (or `ABN_CHROMIUM`) and a fresh profile directory
 * per launch, and leaves nothing running: `close()` kills the process if it does not exit, and the
 * protocol runs over a pipe, so Chromium also exits when the test process dies.
 */
import puppeteer from "puppeteer-core";
import type { Browser, Page } from "puppeteer-core";

export type { Browser, Page };

export const CHROMIUM = Deno.env.get("ABN_CHROMIUM") ?? "/usr/bin/chromium";

/** True when the Chromium executable is installed. */
export const CHROMIUM_AVAILABLE = (() => {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
})();

/**
 * Registers a test that drives Chromium; without it the test is skipped, with one line per
 * process naming the package to install.
 */
export function browserTest(definition: Deno.TestDefinition): void {
  if (!CHROMIUM_AVAILABLE && !Deno.env.get("ABN_TEST_CHROMIUM_SKIP_NOTED")) {
    Deno.env.set("ABN_TEST_CHROMIUM_SKIP_NOTED", "1");
    console.log(
      `UI tests skipped: Chromium is not installed at ${CHROMIUM} (Debian: apt-get install chromium)`,
    );
  }
  Deno.test({ ...definition, ignore: definition.ignore || !CHROMIUM_AVAILABLE });
}

/** Where the UI tests write their screenshots (gitignored). */
export const SCREENSHOT_DIR = new URL("../test-output/ui/", import.meta.url);

export interface BrowserSession {
  browser: Browser;
  /** Closes the browser (killing it after a few seconds) and removes its profile. */
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<BrowserSession> {
  const profile = await Deno.makeTempDir({ prefix: "abn-chromium-" });
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profile,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-dev-shm-usage",
      "--force-color-profile=srgb",
      "--font-render-hinting=none",
    ],
    protocolTimeout: 30_000,
    pipe: true,
  }).catch(async (error) => {
    await Deno.remove(profile, { recursive: true }).catch(() => {});
    throw error;
  });
  return {
    browser,
    async close() {
      const process = browser.process();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const closed = browser.close().then(() => true, () => false);
      const timedOut = new Promise<boolean>((resolve) =>
        timer = setTimeout(() => resolve(false), 5_000)
      );
      if (!(await Promise.race([closed, timedOut]))) process?.kill("SIGKILL");
      clearTimeout(timer);
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  };
}

/** Saves a full-page PNG under `test-output/ui/NAME.png` and answers its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await Deno.mkdir(SCREENSHOT_DIR, { recursive: true });
  const path = new URL(`${name}.png`, SCREENSHOT_DIR).pathname as `${string}.png`;
  await page.screenshot({ path, fullPage: true });
  return path;
}
