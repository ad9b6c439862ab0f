/**
 * Text that a sandbox (or anything else untrusted) controls, made safe for a person to read: {@link
 * io.agentnest.text.HumanText} escapes a string for one line or several, {@link
 * io.agentnest.text.TerminalFilter} does the same to a byte stream on its way to a terminal. Use
 * them for anything a sandbox wrote (output, file names, error text) before a person sees it.
 */
package io.agentnest.text;
