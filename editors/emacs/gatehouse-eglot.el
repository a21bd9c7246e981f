;;; gatehouse-eglot.el --- Gatehouse through eglot  -*- lexical-binding: t; -*-

;; The recipe of docs/editors.md ("Emacs"), as a file: Emacs 28+ with eglot 1.9+ (Debian:
;; emacs-nox, elpa-eglot), nothing else.  M-x gatehouse-chat asks for a prompt and streams the
;; answer, tool calls and their output into the *gatehouse* buffer.  Before code runs, eglot asks
;; with its own window/showMessageRequest prompt: Deny is pre-filled (RET denies); type Allow once
;; (or a scoped grant such as "Allow `touch *` in this session") to run it.  C-g at that prompt denies too (eglot alone would leave the
;; request unanswered until confirmTimeoutSeconds).  M-x gatehouse-stop cancels the running turn,
;; M-x gatehouse-new starts a new session.

;;; Code:

(require 'eglot)
(require 'jsonrpc)
(require 'cl-lib)

(defvar gatehouse-command '("gatehouse" "serve")
  "How eglot starts the Gatehouse server (add \"--workspace\" DIR to fix the folder).")

(defvar gatehouse-timeout 3600
  "Seconds an agent/chat request may take.
jsonrpc's default is 10 s, too short for a real model's turn.")

(define-derived-mode gatehouse-chat-mode special-mode "Gatehouse"
  "The *gatehouse* chat buffer; eglot runs the Gatehouse server for this mode, so it never
replaces the language server of your source buffers.")

(add-to-list 'eglot-server-programs `(gatehouse-chat-mode . ,gatehouse-command))

(defun gatehouse--dismiss-on-quit (handle server method &rest params)
  "C-g at a window/showMessageRequest prompt answers null (dismissed: Gatehouse denies at
once) instead of leaving the request unanswered."
  (if (eq method 'window/showMessageRequest)
      (condition-case nil
          (apply handle server method params)
        (quit nil))  ; JSON null in jsonrpc (eglot's own :null is not valid there)
    (apply handle server method params)))

(advice-add 'eglot-handle-request :around #'gatehouse--dismiss-on-quit)

(defvar gatehouse--server nil)
(defvar gatehouse--session nil)
(defvar gatehouse--running nil)

(defun gatehouse--buffer ()
  (or (get-buffer "*gatehouse*")
      (with-current-buffer (get-buffer-create "*gatehouse*")
        (gatehouse-chat-mode)
        (current-buffer))))

(defun gatehouse--insert (text &optional new-line)
  (with-current-buffer (gatehouse--buffer)
    (let ((inhibit-read-only t))
      (goto-char (point-max))
      (when (and new-line (not (bolp))) (insert "\n"))
      (insert text))))

(defun gatehouse--server ()
  (unless (and gatehouse--server (jsonrpc-running-p gatehouse--server))
    (let ((project (or (project-current nil) (cons 'transient default-directory)))
          (eglot-sync-connect t))  ; wait for the server: the chat request needs it
      (setq gatehouse--server
            (eglot '(gatehouse-chat-mode) project 'eglot-lsp-server gatehouse-command
                   "gatehouse"))))
  gatehouse--server)

(cl-defmethod eglot-handle-notification
  (_server (_method (eql agent/stream)) &rest params)
  "Show each agent/stream event as it arrives."
  (let ((type (plist-get params :type))
        (text (plist-get params :text)))
    (setq gatehouse--session (plist-get params :sessionId))
    (pcase type
      ("content" (gatehouse--insert text))
      ("tool_start"
       (gatehouse--insert (format "> %s %s" (plist-get params :name)
                                  (json-encode (plist-get params :arguments)))
                          t))
      ("tool_output" (gatehouse--insert text t))
      ("tool_end"
       (gatehouse--insert (format "[%s %s]\n" (plist-get params :name)
                                  (plist-get params :status))
                          t))
      ("status" (gatehouse--insert (format "-- %s\n" text) t)))))

(defun gatehouse-chat (prompt)
  "Send PROMPT to Gatehouse; the answer streams into *gatehouse*."
  (interactive "sGatehouse: ")
  (display-buffer (gatehouse--buffer))
  (gatehouse--insert (format "\n>>> %s\n" prompt) t)
  (setq gatehouse--running t)
  (jsonrpc-async-request
   (gatehouse--server) :agent/chat
   (append (list :prompt prompt) (and gatehouse--session (list :sessionId gatehouse--session)))
   :timeout gatehouse-timeout
   :success-fn (lambda (result)
                 (setq gatehouse--running nil
                       gatehouse--session (plist-get result :sessionId))
                 (gatehouse--insert (format "\n[%s]\n" (plist-get result :stopReason)) t))
   :error-fn (lambda (error)
               (setq gatehouse--running nil)
               (gatehouse--insert (format "\n[error: %s]\n" (plist-get error :message)) t))
   :timeout-fn (lambda ()
                 (setq gatehouse--running nil)
                 (gatehouse--insert "\n[no answer within gatehouse-timeout]\n" t))))

(defun gatehouse-stop ()
  "Cancel the running turn (a pending approval is withdrawn, a running command killed)."
  (interactive)
  (when gatehouse--session
    (jsonrpc-async-request (gatehouse--server) :agent/cancel
                           (list :sessionId gatehouse--session)
                           :success-fn #'ignore)))

(defun gatehouse-new ()
  "Start a new session with the next prompt."
  (interactive)
  (setq gatehouse--session nil)
  (gatehouse--insert "\n--- new session ---\n" t))

(provide 'gatehouse-eglot)
;;; gatehouse-eglot.el ends here
