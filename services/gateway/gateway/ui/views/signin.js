// Sign in with a token: checked against the API, then kept in this tab's sessionStorage.

import { ApiError, get, setToken } from "../api.js";
import { clearErrors, field, formError, h, showErrors } from "../dom.js";

export function render(main, { onSignedIn }) {
  const input = h("input", {
    type: "password",
    name: "token",
    autocomplete: "current-password",
    required: true,
    spellcheck: "false",
  });
  const form = h(
    "form",
    { class: "card narrow", novalidate: true },
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste a Hyperpilot API token. It stays in this browser tab only."),
    field("API token", input, {
      field: "token",
      hint: "An admin creates tokens with POST /api/v1/tokens (name and role).",
    }),
    formError(),
    h("button", { type: "submit" }, "Sign in"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const value = input.value.trim();
    if (!value) {
      showErrors(form, { fields: [{ field: "token", message: "Enter a token." }] });
      return;
    }
    setToken(value);
    try {
      await get("/clusters", { quiet: true });
      onSignedIn();
    } catch (error) {
      setToken(null);
      const message =
        error instanceof ApiError && error.status === 401
          ? "This token was not accepted."
          : error.message;
      showErrors(form, {
        fields: [{ field: "token", message, hint: error.hint || "check the token and try again" }],
      });
    }
  });
  main.append(form);
  input.focus();
}
