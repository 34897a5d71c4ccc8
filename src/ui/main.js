/**
 * The page's entry: sign-in and sign-out, the two sections and the hash routes
 * `#/get-via-api[/{experiment_id}]`, `#/api-keys`, `#/audit` and `#/webhooks`.
 */
import {
  api,
  ApiError,
  forgetKey,
  keyRefused,
  setAuthFailureHandler,
  setKeyScopes,
  storedKey,
  storeKey,
} from "./api.js";
import { GetViaApiPage } from "./get_via_api.js";
import { KeysPage } from "./keys.js";
import { AuditPage } from "./audit.js";
import { WebhooksPage } from "./webhooks.js";

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @returns {T}
 */
function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`The page has no #${id}`);
  return /** @type {T} */ (el);
}

const signinSection = byId("signin");
const signinForm = /** @type {HTMLFormElement} */ (byId("signin-form"));
const keyInput = /** @type {HTMLInputElement} */ (byId("signin-key"));
const signinError = byId("signin-error");
const signinButton = /** @type {HTMLButtonElement} */ (byId("signin-submit"));
const app = byId("app");
const main = byId("main");
const orgName = byId("org-name");
const navLinks = {
  "get-via-api": byId("nav-get-via-api"),
  "api-keys": byId("nav-api-keys"),
  "audit": byId("nav-audit"),
  "webhooks": byId("nav-webhooks"),
};

/** The pages of the Information section, by their route. */
const INFORMATION = {
  "api-keys": KeysPage,
  "audit": AuditPage,
  "webhooks": WebhooksPage,
};

/** @type {{ name: string, page: GetViaApiPage | KeysPage | AuditPage | WebhooksPage } | null} */
let current = null;

/**
 * What a refused key means, in words.
 * @param {unknown} error
 */
function signinMessage(error) {
  if (error instanceof ApiError) {
    if (error.status === 401) {
      return "This API key is not valid. Check that you copied the whole key, starting with abn_.";
    }
    if (error.code === "insufficient_scope") {
      return "This key may not read the organization's data (it lacks the read scope; an upload-only key cannot sign in). Sign in with a key that has read or admin.";
    }
    if (error.status === 403) {
      return "This organization is deactivated: its API keys are refused. Ask your administrator to activate it.";
    }
    return error.requestId ? `${error.message} (request id ${error.requestId})` : error.message;
  }
  return String(error);
}

/** @param {string} message */
function showSignin(message = "") {
  current?.page.stop();
  current = null;
  replaceMain();
  app.hidden = true;
  signinSection.hidden = false;
  signinError.textContent = message;
  keyInput.value = "";
  keyInput.setAttribute("aria-invalid", message ? "true" : "false");
  document.title = "Sign in — abn";
  keyInput.focus();
}

function replaceMain() {
  main.replaceChildren();
}

/** @param {any} keys the answer of `GET /keys/` */
function showApp(keys) {
  setKeyScopes(keys);
  signinSection.hidden = true;
  app.hidden = false;
  orgName.textContent = keys.organization?.name ?? "";
  route(false);
}

/** @param {SubmitEvent} event */
async function onSignin(event) {
  event.preventDefault();
  const key = keyInput.value.trim();
  if (!key) {
    signinError.textContent = "Enter your organization's API key.";
    keyInput.setAttribute("aria-invalid", "true");
    keyInput.focus();
    return;
  }
  signinButton.disabled = true;
  signinButton.textContent = "Signing in…";
  try {
    const keys = await api("/keys/", { key });
    storeKey(key);
    keyInput.value = "";
    signinError.textContent = "";
    showApp(keys);
  } catch (error) {
    signinError.textContent = signinMessage(error);
    keyInput.setAttribute("aria-invalid", "true");
    keyInput.select();
    keyInput.focus();
  } finally {
    signinButton.disabled = false;
    signinButton.textContent = "Sign in";
  }
}

function signOut() {
  forgetKey();
  if (location.hash) history.replaceState(null, "", location.pathname);
  showSignin();
}

/**
 * Shows the section the address names.
 * @param {boolean} moveFocus true when the reader navigated (focus goes to the new heading)
 */
function route(moveFocus) {
  if (app.hidden) return;
  const hash = location.hash.replace(/^#\/?/, "");
  const [section, ...rest] = hash.split("/");
  const name = section in INFORMATION ? section : "get-via-api";
  if (section !== name) history.replaceState(null, "", "#/get-via-api");
  for (const [key, link] of Object.entries(navLinks)) {
    if (key === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (current?.name !== name) {
    current?.page.stop();
    replaceMain();
    current = {
      name,
      page: name in INFORMATION
        ? new INFORMATION[/** @type {keyof typeof INFORMATION} */ (name)](main)
        : new GetViaApiPage(main),
    };
    if (moveFocus) main.querySelector("h1")?.focus();
  }
  if (current.page instanceof GetViaApiPage) {
    let id = "";
    try {
      id = decodeURIComponent(rest.join("/"));
    } catch {
      id = "";
    }
    current.page.show(id);
  }
}

setAuthFailureHandler((error) => {
  forgetKey();
  showSignin(
    error.status === 403
      ? "This organization has been deactivated: its API keys are refused. Ask your administrator to activate it."
      : `Your API key is no longer accepted: ${
        error.message.replace(/\.$/, "")
      }. Sign in with a valid key.`,
  );
});

signinForm.addEventListener("submit", onSignin);
keyInput.addEventListener("input", () => {
  signinError.textContent = "";
  keyInput.setAttribute("aria-invalid", "false");
});
byId("signout").addEventListener("click", signOut);
byId("skip-link").addEventListener("click", (event) => {
  // The address keeps its route: focus moves without following the link.
  event.preventDefault();
  main.focus();
});
globalThis.addEventListener("hashchange", () => route(true));

const saved = storedKey();
if (saved) {
  api("/keys/").then(showApp).catch((error) => {
    if (!(error instanceof ApiError && keyRefused(error))) {
      showSignin(signinMessage(error));
    }
  });
} else {
  showSignin();
}
