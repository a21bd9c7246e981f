;;; One scenario of tests/editors/test_emacs.py, in batch Emacs with Debian's eglot.  -*- lexical-binding: t; -*-
;; completing-read (what eglot asks window/showMessageRequest with) is replaced by a recording
;; function that answers GATEHOUSE_ANSWER, or, for "default", what RET would pick: the pre-filled
;; initial input.
(require 'json)
(let* ((answer (getenv "GATEHOUSE_ANSWER"))
       (report (getenv "GATEHOUSE_REPORT"))
       (asked nil)
       (samples nil)
       (default-directory (file-name-as-directory (getenv "GATEHOUSE_WORKSPACE"))))
  (when (getenv "GATEHOUSE_COMMAND")  ; else: the user's init file set it (docs/editors.md)
    (setq gatehouse-command (append (json-read-from-string (getenv "GATEHOUSE_COMMAND")) nil)))
  (advice-add 'completing-read :override
              (lambda (prompt collection &optional _pred _req initial &rest _)
                (push (list (cons 'prompt prompt) (cons 'choices (vconcat collection))
                            (cons 'initial initial))
                      asked)
                (cond ((equal answer "default") initial)  ; RET
                      ((equal answer "quit") (signal 'quit nil))  ; C-g
                      (t answer))))
  (when (getenv "GATEHOUSE_CONFIG")  ; the user's eglot-workspace-configuration
    (setq-default eglot-workspace-configuration (car (read-from-string (getenv "GATEHOUSE_CONFIG")))))
  (gatehouse-chat (getenv "GATEHOUSE_PROMPT"))
  (let ((deadline (+ (float-time) 60)))
    (while (and gatehouse--running (< (float-time) deadline))
      (accept-process-output nil 0.05)
      (let ((now (with-current-buffer (gatehouse--buffer) (buffer-string))))
        (unless (equal now (car samples)) (push now samples)))))
  (with-temp-file report
    (insert (json-encode
             (list (cons 'asked (vconcat (nreverse asked)))
                   (cons 'samples (vconcat (nreverse samples)))
                   (cons 'finished (not gatehouse--running))
                   (cons 'buffer (with-current-buffer (gatehouse--buffer) (buffer-string)))))))
  (ignore-errors (eglot-shutdown gatehouse--server))
  (kill-emacs 0))
